/*
 * setup: from parsed options to the library's inputs.
 */
#ifndef MB_SETUP_H
#define MB_SETUP_H

#include "mb_cl.h"
#include "mb_grid.h"
#include "mb_host.h"
#include "mb_model.h"
#include "mb_num.h"
#include "mb_plan.h"
#include "mb_step.h"
#include "mb_tuning.h"
#include "options.h"

/* Load the model that --model or --config names, cut to --layers. */
int mb_setup_model(const struct mb_args *args, struct mb_model *m);

/*
 * The matrices Newton-Schulz runs on: --shape's, else the model's Muon
 * matrices (one entry a matrix, repeats kept), at most MAX into SHAPES, their
 * number into *N. A model without Muon matrices is -MB_EINPUT.
 */
int mb_setup_muon_shapes(const struct mb_args *args, struct mb_shape *shapes, size_t max,
			 size_t *n);

/*
 * The plan settings of ZeRO stage STAGE (one of --stage's) and the options
 * (--gather-budget, --sub-group-size, --world-size, --rank, --param-order,
 * --momentum-dtype, --pin-chunk); a default that depends on the stage
 * (--momentum-dtype auto) is resolved for STAGE.
 */
void mb_setup_plan_settings(const struct mb_args *args, unsigned stage, struct mb_plan_settings *s);

/* The stages of --stage (1 to 3 of them, each once) into STAGES. */
int mb_setup_stages(const struct mb_args *args, unsigned *stages, size_t *n);

/*
 * The variants of --variant (MB_NVARIANTS at most), each once, in the order
 * of mb_variant's table: master first in each stage, as the base of the
 * changes.
 */
int mb_setup_variants(const struct mb_args *args, unsigned *variants, size_t *n);

/*
 * The cells of the options' lists (mb_grid): --stage, --variant (with
 * VARIANTS false, the base variant alone: plan, whose figures no variant
 * changes), --gather-budget and --sub-group-size; release with
 * mb_grid_release.
 */
int mb_setup_grid(const struct mb_args *args, bool variants, struct mb_grid *g);

/*
 * Whether MUONBENCH_RACE_CHECK asks for the race checker (set, not "0"):
 * every operation of the step checked for races (lib/mb_race), at a cost
 * that bench/race-cost.sh measures.
 */
bool mb_setup_race_check(void);

/*
 * The step settings of cell C, the one place they come from the options:
 * the plan's (mb_setup_plan_settings for C's stage, at C's gather budget and
 * sub-group size), C's variant, and the step's own (--pin-memory,
 * --writeback-dep, --seed, --grad-clip, --fwd-bwd, --seq x --micro-batch,
 * --ns-rate); Newton-Schulz's GEMMs in PRECISION (--ns-precision resolved,
 * mb_setup_precision).
 */
void mb_setup_step_settings(const struct mb_args *args, const struct mb_grid_cell *c,
			    enum mb_precision precision, struct mb_step_settings *s);

/* The device selection of --platform and --device. */
void mb_setup_device_select(const struct mb_args *args, struct mb_cl_select *sel);

/* The CLBlast parameters that --tuning chooses for a device, and why. */
struct mb_setup_tuning {
	enum mb_tuning_match match; /* MB_TUNING_NONE: CLBlast's defaults */
	char source[4096];	    /* "default", a path, or "shipped tuning/NAME.json" */
	char why[1024];		    /* for people */
};

/*
 * What --tuning chooses for device D: off, a file (which must be made for
 * D: bad input otherwise) or auto (mb_tuning_find; a tuning of D's family
 * only once it passes ns --verify on D, in a child process). *T holds the
 * parameters unless chosen->match is MB_TUNING_NONE.
 */
int mb_setup_tuning(const struct mb_args *args, const struct mb_cl_device_info *d,
		    struct mb_tuning *t, struct mb_setup_tuning *chosen);

/*
 * Open the device of --platform and --device, and apply CLBlast's parameters
 * as --tuning says (cl->tuning, tuning_match and tuning_why record what is
 * in force and why).
 */
int mb_setup_device(const struct mb_args *args, struct mb_cl *cl);

/*
 * What the tuning in force on CL supplies, and how it was chosen, as one
 * sentence without its period into BUF (LEN bytes), returned: "CLBlast
 * parameters: FILE (exact: ...)", "CLBlast parameters and Newton-Schulz
 * tiles: FILE (...)", "Newton-Schulz tiles: FILE (...); CLBlast parameters:
 * default (none in it)", or "CLBlast parameters: default (none: WHY)". The
 * results' tuning column stays the file (cl->tuning) in each case.
 */
const char *mb_setup_tuning_said(const struct mb_cl *cl, char *buf, size_t len);

/* Room for mb_setup_tuning_said's sentence: the file, the match and the why, and the words. */
#define MB_SETUP_TUNING_SAID_LEN (4096 + 16 + 1024 + 128)

/* --ns-precision auto, before it is resolved for a device and a method. */
#define MB_SETUP_PRECISION_AUTO (-1)

/*
 * --ns-precision's list into PRECISIONS (at most MB_NPRECISIONS + 1 of
 * them, each a precision or MB_SETUP_PRECISION_AUTO), their count into *N;
 * its words were checked, each once, when the options were parsed.
 */
int mb_setup_precisions(const struct mb_args *args, int *precisions, size_t *n);

/*
 * The one precision of --ns-precision (a list is ns's alone) for METHOD on
 * the device INFO describes, into *P: auto is DeepSpeed's where the device
 * has the tensor-core path (mb_ns_precision_auto); with no device (INFO
 * NULL: plan, predict), fp32.
 */
int mb_setup_precision(const struct mb_args *args, const struct mb_cl_device_info *info,
		       enum mb_ns_method method, enum mb_precision *p);

/*
 * Bind the process as --cpus and --membind say, or to the NUMA node of the
 * selected device with --numa auto (saying on stderr what was found), and
 * describe the host and the binding in force into *host.
 */
int mb_setup_binding(const struct mb_args *args, struct mb_host *host);

#endif

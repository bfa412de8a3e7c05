/*
 * options: the command line of muonbench, as one table.
 *
 * Every option is declared once in options.c with its type, default, range,
 * the subcommands that take it and its help; the same table parses argv,
 * applies the defaults (parsed like user input, so help and code agree) and
 * prints --help.
 */
#ifndef MB_OPTIONS_H
#define MB_OPTIONS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "mb_compare.h"
#include "mb_device.h"
#include "mb_knob.h"
#include "mb_plan.h"
#include "mb_variant.h"
#include "mb_words.h"

enum mb_command {
	MB_CMD_RUN,
	MB_CMD_PLAN,
	MB_CMD_DEVICES,
	MB_CMD_NS,
	MB_CMD_BANDWIDTH,
	MB_CMD_TUNE,
	MB_CMD_REPORT,
	MB_CMD_COMPARE,
	MB_CMD_PLOT,
	MB_CMD_PREDICT,
	MB_CMD_PROFILE,
	MB_CMD_ADVISE,
	MB_NCOMMANDS
};

/* --format's values (a list, mb_words.h): Markdown tables, CSV rows, JSON. */
#define MB_FORMATS(X, SEP)	X(MD, "md") SEP X(CSV, "csv") SEP X(JSON, "json")
#define MB_FORMAT_ENUM_(e, ...) MB_FORMAT_##e,
enum mb_format { MB_FORMATS(MB_FORMAT_ENUM_, ) MB_NFORMATS };

/* The shapes ns times without --shape (the three-way table uses them). */
#define MB_NS_DEFAULT_SHAPES "256x768,1024x1024,1024x3072"

/*
 * Newton-Schulz's ladder that profile measures without --shape, small to
 * large: the tiny model's sizes (256x256 its square q and o, which run the
 * standard iteration, faster than the Gram method's rungs around their FLOPs
 * say) to a 0.6B's largest (clamped beyond).
 */
#define MB_PROFILE_DEFAULT_SHAPES "128x256,256x256,256x768,512x1536,1024x3072"

/* The most options the table may hold (struct mb_args' given has a bit for each). */
#define MB_OPTIONS_MAX 128

/*
 * predict's options that set fields of the device profile, once for the
 * option table and predict.c: X(id, option, first key, second key or NULL,
 * help); the value of option ID is args->profile_flags[MB_PF_ID]. A value may be a list, which
 * sweeps the field.
 */
#define MB_PREDICT_FLAGS(X)                                                                  \
	X(H2D, "h2d-gbs", "h2d_pinned_gbs", NULL, "GB/s of an H2D copy from pinned memory")  \
	X(D2H, "d2h-gbs", "d2h_pinned_gbs", NULL, "GB/s of a D2H copy to pinned memory")     \
	X(BOTH, "both-gbs", "both_pinned_gbs", NULL,                                         \
	  "GB/s of a pinned H2D and D2H at once, the bytes of both")                         \
	X(PAGEABLE, "pageable-gbs", "h2d_pageable_gbs", "d2h_pageable_gbs",                  \
	  "GB/s of a pageable copy, either way")                                             \
	X(PAGEABLE_H2D, "pageable-h2d-gbs", "h2d_pageable_gbs", NULL,                        \
	  "GB/s of an H2D copy from pageable "                                               \
	  "memory")                                                                          \
	X(PAGEABLE_D2H, "pageable-d2h-gbs", "d2h_pageable_gbs", NULL,                        \
	  "GB/s of a D2H copy to pageable "                                                  \
	  "memory")                                                                          \
	X(PAGEABLE_BOTH, "pageable-both-gbs", "both_pageable_gbs", NULL,                     \
	  "GB/s of an H2D and a D2H at once when either is pageable")                        \
	X(HOLDS, "pageable-holds-host", "pageable_holds_host", NULL,                         \
	  "on: the host that enqueues a pageable copy waits for it to finish; on|off")       \
	X(PEER, "peer-gbs", "peer_gbs", NULL,                                                \
	  "GB/s of the link between the ranks' GPUs that --world-size's collectives take; "  \
	  "0: not modelled")                                                                 \
	X(PEER_PCIE, "peer-shares-pcie", "peer_shares_pcie", NULL,                           \
	  "on: that link is the host copies' PCIe too, shared with them; on|off")            \
	X(EXPOSED, "pageable-exposed", "pageable_exposed_frac", NULL,                        \
	  "of a pageable copy's time, the part a kernel on another queue cannot hide, 0-1")  \
	X(NS, "ns-gflops", NULL, NULL, "GFLOP/s of Newton-Schulz by --ns-method")            \
	X(FILL, "fill-gbs", "fill_gbs", NULL,                                                \
	  "GB/s of the backward stand-in's gradient fill (a PRNG), bytes written")           \
	X(CAST, "cast-gbs", "cast_gbs", NULL,                                                \
	  "GB/s of the device's fp32/bf16 casts (rounding, widening), bytes moved")          \
	X(MOMENTUM, "momentum-gbs", "momentum_gbs", NULL,                                    \
	  "GB/s of the device's momentum kernel, bytes read and written")                    \
	X(NORM, "norm-gbs", "norm_gbs", NULL,                                                \
	  "GB/s of the device's norm kernel (the gradient norm's partial sums), bytes read") \
	X(FWD_BWD, "fwd-bwd-gflops", "fwd_bwd_gflops", NULL,                                 \
	  "GFLOP/s of the forward/backward's GEMMs")                                         \
	X(HOST_OPT, "host-opt-gbs", "host_opt_gbs", NULL,                                    \
	  "GB/s the host optimizer reads and writes")                                        \
	X(MEMCPY, "memcpy-gbs", "memcpy_gbs", NULL,                                          \
	  "GB/s of the host's streaming passes (clipping, the ZeRO-3 cast)")                 \
	X(OVERHEAD, "overhead-us", "command_overhead_us", NULL,                              \
	  "microseconds added to each device "                                               \
	  "command")

#define MB_PREDICT_ENUM(id, name, key, key2, help) MB_PF_##id,
enum mb_predict_flag { MB_PREDICT_FLAGS(MB_PREDICT_ENUM) MB_PREDICT_NFLAGS };
#undef MB_PREDICT_ENUM

/* A list option's values (--gather-budget 128Mi,512Mi: a sweep), at least one. */
#define MB_LIST_MAX 16
struct mb_u64_list {
	uint64_t v[MB_LIST_MAX];
	size_t n;
	const char *text; /* as given ("2Mi,8Mi") */
};

/* What the command line asked for, defaults filled in. */
struct mb_args {
	enum mb_command command;
	bool help, version;

	const char *model, *config;
	uint64_t layers;		    /* 0: all */
	const char *stages;		    /* "2" or, for run, a list "1,2,3" */
	struct mb_u64_list gather_budgets;  /* bytes; more than one: run, plan and predict sweep */
	struct mb_u64_list sub_group_sizes; /* elements; likewise */
	uint64_t gather_budget;		    /* bytes: the first of gather_budgets */
	uint64_t sub_group_size;	    /* elements: the first of sub_group_sizes */
	uint64_t pin_chunk;		    /* bytes */
	uint64_t reduce_bucket_size;	    /* elements */
	double grad_clip;		    /* the grads' norm at most; 0: no clipping */
	uint64_t world_size, rank;
	uint64_t local_rank; /* not an option: run's rank on its node (mb_ranks), which picks the
				GPU */
	enum mb_format format;

	uint64_t platform; /* valid when given */
	const char *device;
	uint64_t device_mem_limit; /* bytes, 0: none */
	uint64_t seed;

	const char *variants; /* a list of the variants' names, or all */
	uint64_t runs, steps;
	const char *measure;		   /* "A-B"; NULL: 2-6 cut to the steps */
	const char *knob[MB_KNOBS_ROOM];   /* mb_knob's table: each knob's word */
	enum mb_pinned_alloc pinned_alloc; /* how pinned host memory is made */
	const char *pinned_device_copy;	   /* auto|yes|no */
	uint64_t resume_at;		   /* 0: never */
	uint64_t seq, micro_batch;
	const char *fit_check;			 /* on|off */
	const char *interleave;			 /* on|off */
	const char *cpus, *membind, *numa, *out; /* numa: auto|off */
	const char *tuning;			 /* off, auto or a file */
	const char *time_budget;		 /* tune */
	bool tune_ns;				 /* tune --ns: our 16-bit GEMM's tiles */
	bool quiet;

	const char *sizes; /* bandwidth */

	const char *shapes;	   /* ns */
	const char *ns_precisions; /* ns: a list of fp32|bf16|fp16|auto */
	uint64_t ns_rate;	   /* run: calibrated Newton-Schulz, GFLOP/s; 0: off */
	uint64_t batch, reps;
	bool verify;
	const char *peer; /* ns: the peer's results file; NULL: none */

	double alpha, threshold;   /* compare: significance, and the smallest slowdown in % */
	double phase_floor;	   /* compare: a phase's smallest change, in % of the apply */
	double noise_factor;	   /* compare: times the baseline's run-to-run spread */
	enum mb_estimate estimate; /* compare: what a timing is taken as */
	bool allow_device_change, ratios, exact;

	const char *image; /* plot: -o */

	const char *profile;  /* predict, run: a shipped name or a file; NULL: the command's default
			       */
	const char *timeline; /* run, predict: each step's spans to this CSV; NULL: none */
	bool if_missing;      /* profile: only when there is none */
	bool confirm;	      /* advise: run the baseline and the best points */
	const char *profile_flags[MB_PREDICT_NFLAGS]; /* predict: --h2d-gbs ... */

	char **files; /* report, compare, plot: the results files, in argv */
	int nfiles;

	/* bit i % 64 of word i / 64: option i of the table was on the command line */
	uint64_t given[MB_OPTIONS_MAX / 64];

	/*
	 * The options above that the commands read as what they stand for, set
	 * once parsed (defaults and --ds-config applied): on|off and host|event
	 * as bools, --stage as its stages in order and --variant as its
	 * variants in the table's order (0 of them where the command takes none).
	 * The options of words (--format, --param-order, ...) are their enums
	 * already: the parser stores the index of the value among its list's
	 * words.
	 */
	bool pin_memory_on, fwd_bwd_on, fit_check_on, interleave_on, numa_auto;
	unsigned stage_list[3];
	size_t nstages;
	enum mb_variant variant_list[MB_NVARIANTS];
	size_t nvariants;

	/* --ds-config: a DeepSpeed config JSON, and the values it gave TEXT and CHOICE options */
	const char *ds_config;
	char ds_values[128]; /* (those options point here) */
	size_t ds_values_used;
};

/* The subcommand's name ("plan"). */
const char *mb_command_name(enum mb_command c);

/*
 * Parse ARGC/ARGV (argv[0] is the program) into *args. Returns 0, or
 * -MB_EINPUT with the message naming the option and the value. With
 * --ds-config FILE, the options the file names are set too, unless the
 * command line gives them, each value checked as the command line's would be
 * (a bad one is refused with FILE:LINE:COL and the key); what the file says
 * that is not used, "auto" and what a value means are said on stderr, one
 * line each.
 */
int mb_args_parse(struct mb_args *args, int argc, char **argv);

/* Whether the option called NAME ("model") was given on the command line. */
bool mb_args_given(const struct mb_args *args, const char *name);

/*
 * Knob K's word in ARGS as its place among the knob's words (mb_knob.h),
 * "auto" as STAGE's word; 0 where it has none.
 */
unsigned mb_args_knob(const struct mb_args *args, enum mb_knob k, unsigned stage);

/* --ns-method (a knob of no stage's own) as its enum. */
static inline enum mb_ns_method mb_args_ns_method(const struct mb_args *args)
{
	return (enum mb_ns_method)mb_args_knob(args, MB_KNOB_NS_METHOD, 0);
}

/*
 * Run's option I (0 on, in the table's order), its value in ARGS as text
 * into BUF ("" for an option each rank may have its own of under MPI: its
 * device, binding, output); returns its name, or NULL past the last. The
 * ranks agree on these (cmd/ranks.c).
 */
const char *mb_args_run_option(const struct mb_args *args, size_t i, char *buf, size_t len);

/* Print the help of COMMAND (usage, what it does, its options) to OUT. */
void mb_print_help(FILE *out, enum mb_command command);

#endif

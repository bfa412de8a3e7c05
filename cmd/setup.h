/*
 * setup: from parsed options to the library's inputs.
 */
#ifndef MB_SETUP_H
#define MB_SETUP_H

#include "mb_cl.h"
#include "mb_host.h"
#include "mb_model.h"
#include "mb_plan.h"
#include "options.h"

/* Load the model that --model or --config names, cut to --layers. */
int mb_setup_model(const struct mb_args *args, struct mb_model *m);

/* The plan settings of --stage, --gather-budget, --sub-group-size, --world-size, --rank. */
void mb_setup_plan_settings(const struct mb_args *args, struct mb_plan_settings *s);

/* The stages of --stage (1 to 3 of them, each once) into STAGES. */
int mb_setup_stages(const struct mb_args *args, unsigned *stages, size_t *n);

/* The device selection of --platform and --device. */
void mb_setup_device_select(const struct mb_args *args, struct mb_cl_select *sel);

/*
 * Open the device of --platform and --device, and apply CLBlast's parameters
 * as --tuning says (cl->tuning records what is in force). A tuning file made
 * for another device is bad input.
 */
int mb_setup_device(const struct mb_args *args, struct mb_cl *cl);

/*
 * Bind the process as --cpus and --membind say, or to the NUMA node of the
 * selected device with --numa auto (saying on stderr what was found), and
 * describe the host and the binding in force into *host.
 */
int mb_setup_binding(const struct mb_args *args, struct mb_host *host);

#endif

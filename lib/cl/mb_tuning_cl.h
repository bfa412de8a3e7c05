/*
 * mb_tuning_cl: a tuning (mb_tuning: CLBlast's kernel parameters for a
 * device) applied to CLBlast on the device.
 */
#ifndef MB_TUNING_CL_H
#define MB_TUNING_CL_H

#include "mb_cl.h"
#include "mb_tuning.h"

/* Apply every kernel of T to CL's device. A refusal names the kernel and CLBlast's status. */
int mb_tuning_apply(const struct mb_tuning *t, const struct mb_cl *cl);

#endif

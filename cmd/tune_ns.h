/*
 * tune_ns: tune --ns, our 16-bit GEMM kernel's tiles swept on the device
 * for the model's Newton-Schulz GEMMs, checked, the fastest per size of GEMM
 * stored in the device's tuning (a helper of tune).
 */
#ifndef MB_TUNE_NS_H
#define MB_TUNE_NS_H

#include "options.h"

/* tune --ns with ARGS: 0, or an error said as mb_err. */
int mb_tune_ns(const struct mb_args *args);

#endif

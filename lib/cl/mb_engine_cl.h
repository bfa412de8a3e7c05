/*
 * mb_engine_cl: the OpenCL engine (mb_engine): each operation of the
 * schedule on mb_cl's queues, with the device buffers through the ledger,
 * the kernels of mb_ns, mb_rng and mb_fwdbwd, and the profiling events of
 * the commands for their times.
 */
#ifndef MB_ENGINE_CL_H
#define MB_ENGINE_CL_H

#include "mb_cl.h"
#include "mb_engine.h"
#include "mb_hostmem.h"
#include "mb_ledger.h"
#include "mb_model.h"
#include "mb_ns_cl.h"

/*
 * A new OpenCL engine into *OUT (mb_engine_destroy frees it) on CL's
 * queues, allocating through LEDGER, running NS's kernels, copying to and
 * from HOST[b] for each host buffer b (NULL where the rank has none; the
 * engine may pin one, mb_engine_pin), and the forward/backward of model M
 * for TOKENS tokens. Nothing here is owned.
 */
int mb_engine_cl_new(const struct mb_cl *cl, struct mb_ledger *ledger, struct mb_ns *ns,
		     struct mb_hostbuf *const host[MB_HOST_NBUFFERS], const struct mb_model *m,
		     uint64_t tokens, struct mb_engine **out);

#endif

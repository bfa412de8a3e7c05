/*
 * mb_fwdbwd_cl: a synthetic forward and backward pass on the device (its
 * sizes, FLOPs and hook: mb_fwdbwd), so that a step's
 * iteration time and device memory resemble a real one's.
 *
 * For T = seq x micro-batch tokens, every 2-D matrix W (rows x cols) of each
 * decoder layer, and the output head (lm_head, or the tied embedding), runs
 * the GEMMs a linear layer runs: forward Y = X Wᵀ; backward dX = dY W and
 * dW = dYᵀ X. With gradient checkpointing, as the reference trains, the
 * forward keeps one T x hidden fp32 checkpoint per layer and the backward
 * recomputes each layer's forward before its own. Activations, weights
 * (fp32, zeros: GEMM time does not depend on the values) and CLBlast's
 * temporaries all go through the ledger, in its "forward" and "backward"
 * phases; everything is freed when the backward ends.
 */
#ifndef MB_FWDBWD_CL_H
#define MB_FWDBWD_CL_H

#include <stdint.h>

#include "mb_fwdbwd.h"
#include "mb_ledger.h"
#include "mb_model.h"

/*
 * Run forward then backward for TOKENS tokens; host-clock seconds of each
 * (the backward's with what HOOK, when not NULL, enqueues and waits for).
 * A layer that mb_fwdbwd_chunk_tokens cannot cut is -MB_EFAIL before
 * anything is allocated (and by mb_fwdbwd_reserve).
 */
int mb_fwdbwd_run(const struct mb_model *m, uint64_t tokens, const struct mb_cl *cl,
		  struct mb_ledger *ledger, const struct mb_fwdbwd_hook *hook, double *forward_s,
		  double *backward_s);

/*
 * Reserve every device buffer the pass will allocate for TOKENS tokens, in
 * the ledger's pool (mb_ledger_reserve), as alive in EPOCH only: sized from
 * the model, CLBlast's temporary from the device.
 */
int mb_fwdbwd_reserve(const struct mb_model *m, uint64_t tokens, const struct mb_cl *cl,
		      struct mb_ledger *ledger, unsigned epoch);

/*
 * The bytes of CLBlast's temporary buffer of the pass for TOKENS tokens on
 * CL's device ("clblast.fwd.temp"), into *BYTES; nothing is allocated. A
 * layer that cannot be cut small enough is refused, as by mb_fwdbwd_run.
 */
int mb_fwdbwd_temp_bytes(const struct mb_model *m, uint64_t tokens, const struct mb_cl *cl,
			 uint64_t *bytes);

#endif

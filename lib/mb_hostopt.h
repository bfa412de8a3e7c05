/*
 * mb_hostopt: the optimizer step on the host, as CPU offload runs it.
 *
 * Muon's parameters take the orthogonalized update that came back from the
 * device: p = p (1 - lr wd) - lr u. The rest take AdamW (bias-corrected,
 * decoupled weight decay). Both write the new parameter as bf16 into the
 * staging buffer in the same pass, ready to go back to the device. OpenMP
 * threads, static schedule, no reductions: the result does not depend on
 * the thread count. The calls share their elements out among the threads
 * of the parallel region they are called in (an orphaned `omp for`, no
 * barrier at the end), so a whole host step is one region: how the threads
 * wait between regions decides the cost on a busy machine, and muonbench
 * makes them wait passively (cmd/main.c says why). Called outside a
 * parallel region, they run on the calling thread alone.
 */
#ifndef MB_HOSTOPT_H
#define MB_HOSTOPT_H

#include <stddef.h>
#include <stdint.h>

struct mb_optim {
	float muon_beta, muon_lr, muon_wd;
	float adam_lr, adam_beta1, adam_beta2, adam_eps, adam_wd;
};

/* Muon's reference values and its auxiliary AdamW's (docs/design.md). */
#define MB_OPTIM_DEFAULTS                                            \
	{                                                            \
		0.95f, 0.02f, 0.0f, 3e-4f, 0.9f, 0.95f, 1e-10f, 0.0f \
	}

/* fp32 to bf16, rounding to nearest even (NaN stays NaN). */
uint16_t mb_bf16(float x);

/* Muon over N elements: P from the update U; STAGING (unless NULL) gets bf16(P). */
void mb_hostopt_muon(float *p, const float *u, uint16_t *staging, uint64_t n,
		     const struct mb_optim *o);

/* AdamW step T (1 for the first) over N elements, moments M and V; STAGING as Muon's. */
void mb_hostopt_adamw(float *p, const float *g, float *m, float *v, uint16_t *staging, uint64_t n,
		      uint64_t t, const struct mb_optim *o);

/* STAGING = bf16(P) over N elements: the host cast of a copy_ to bf16 device params. */
void mb_hostopt_cast(const float *p, uint16_t *staging, uint64_t n);

/*
 * Bytes the host optimizer reads and writes in a step over MUON and ADAMW
 * elements: Muon reads p and u and writes p and bf16; AdamW reads p, g, m,
 * v and writes p, m, v and bf16 (what host_opt_gbs is counted in).
 */
static inline double mb_hostopt_bytes(uint64_t muon, uint64_t adamw)
{
	return 14.0 * (double)muon + 30.0 * (double)adamw;
}

/* A 64-bit checksum of BYTES at P, continuing from H (start with 0). */
uint64_t mb_checksum(const void *p, uint64_t bytes, uint64_t h);

/* A piece of memory: a buffer in pinned chunks is a list of them. */
struct mb_span {
	const void *ptr;
	uint64_t bytes;
};

/* The checksum of the N spans one after the other: the same as mb_checksum
 * of their concatenation, however they are cut. */
uint64_t mb_checksum_spans(const struct mb_span *spans, size_t n, uint64_t h);

#endif

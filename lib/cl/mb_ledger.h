/*
 * mb_ledger: every device buffer, allocated and released through one book.
 *
 * The ledger knows the bytes in use now, the peak, the peak within each named
 * phase ("backward", "step"), and the largest buffers at the overall peak.
 * With a limit set (--device-mem-limit) it refuses an allocation that would
 * pass it with the same error as the device's own
 * CL_MEM_OBJECT_ALLOCATION_FAILURE, so out-of-memory paths can be tested on
 * any device.
 *
 * The pool: a step must not allocate or release device memory while it
 * runs (on CUDA's driver that would keep the two queues from overlapping),
 * so the buffers a step needs are reserved by tag before the first step and
 * made once (mb_ledger_reserve, mb_ledger_pool_make). An allocation whose
 * tag has a free reserved buffer large enough is lent it; the books stay
 * logical: it books the bytes it asked for, as a real allocation would, so
 * the peaks are those of the allocations. Tags reserved in different epochs
 * (parts of a step that are never alive together: the forward/backward, the
 * backward's bucket, the apply) share device buffers, the k-th largest of
 * every epoch in one, as a caching allocator would reuse them.
 *
 * Buffers tagged "clblast.*" are CLBlast's temporaries, whose size depends
 * on the device and the kernel parameters in force. The ledger also keeps
 * every peak without them (the "own" peaks): those are fixed by the plan
 * alone, the same on every device.
 */
#ifndef MB_LEDGER_H
#define MB_LEDGER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mb_cl.h"

#define MB_LEDGER_TAG_MAX    32
#define MB_LEDGER_PHASES_MAX 8
#define MB_LEDGER_TOP	     4		/* buffers remembered at the peak */
#define MB_LEDGER_CLBLAST    "clblast." /* the tag prefix of CLBlast's temporaries */

struct mb_ledger_entry {
	char tag[MB_LEDGER_TAG_MAX];
	uint64_t bytes;
	cl_mem mem;
};

/* A reserved place in the pool: TAG may borrow pooled buffer BUFFER. */
struct mb_ledger_slot {
	char tag[MB_LEDGER_TAG_MAX];
	unsigned epoch;
	uint64_t bytes;
	const char *knob; /* what makes it smaller, for errors: "a smaller --gather-budget needs
			     less" */
	size_t buffer;
	bool lent;
};

struct mb_ledger_pooled {
	cl_mem mem;
	uint64_t bytes;
	bool lent;
};

struct mb_ledger {
	const struct mb_cl *cl;
	uint64_t limit_bytes; /* 0: none */
	uint64_t current_bytes, peak_bytes;
	uint64_t own_current_bytes, own_peak_bytes; /* without CLBlast's temporaries */
	struct mb_ledger_entry *live;
	size_t nlive, live_alloc;
	struct mb_ledger_entry top[MB_LEDGER_TOP]; /* largest live at the peak */
	size_t ntop;
	struct {
		char name[MB_LEDGER_TAG_MAX];
		uint64_t peak_bytes, own_peak_bytes;
	} phases[MB_LEDGER_PHASES_MAX];
	int nphases, phase; /* phase: index of the current one, -1 before any */
	struct mb_ledger_slot *slots;
	size_t nslots;
	struct mb_ledger_pooled *pool; /* made by mb_ledger_pool_make */
	size_t npool;
	uint64_t pool_bytes;			 /* device memory the pool holds */
	uint64_t device_allocs, device_releases; /* clCreateBuffer / clReleaseMemObject calls */
};

/* An empty ledger for CL's device; LIMIT_BYTES 0 for no limit. */
void mb_ledger_init(struct mb_ledger *l, const struct mb_cl *cl, uint64_t limit_bytes);

/*
 * Allocate a read-write device buffer of BYTES, tagged TAG (a short name:
 * "ns.workspace"), into *out. A refusal or a failure is -MB_EFAIL naming the
 * device, the tag, the size and what is in use.
 */
int mb_ledger_alloc(struct mb_ledger *l, uint64_t bytes, const char *tag, cl_mem *out);

/* Release MEM (NULL is fine; a pooled buffer goes back to the pool) and take it off the books. */
void mb_ledger_free(struct mb_ledger *l, cl_mem mem);

/*
 * Reserve COUNT pooled buffers of BYTES for allocations tagged TAG, which
 * are alive only in EPOCH. KNOB says what makes them smaller ("a smaller
 * --gather-budget needs less"; NULL: nothing), for the error when one is
 * larger than the device allocates at once.
 * Before mb_ledger_pool_make.
 */
int mb_ledger_reserve(struct mb_ledger *l, unsigned epoch, const char *tag, uint64_t bytes,
		      unsigned count, const char *knob);

/*
 * Make the reserved buffers on the device. A buffer larger than the device
 * allocates at once is refused here, before any step, naming its tag, its
 * size, the maximum and the knob.
 */
int mb_ledger_pool_make(struct mb_ledger *l);

/* Enter phase NAME (entered again, its peak goes on from where it was). */
void mb_ledger_phase(struct mb_ledger *l, const char *name);

/* The peak bytes within phase NAME; 0 if it never ran. */
uint64_t mb_ledger_phase_peak(const struct mb_ledger *l, const char *name);

/* The same without CLBlast's temporaries. */
uint64_t mb_ledger_phase_own_peak(const struct mb_ledger *l, const char *name);

/* Release every buffer still on the books, and the books. */
void mb_ledger_release(struct mb_ledger *l);

#endif

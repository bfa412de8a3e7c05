/*
 * mb_hostmem: host buffers that cross the bus, pinned or pageable.
 *
 * Pinned memory is what OpenCL offers for it: a CL_MEM_ALLOC_HOST_PTR
 * buffer, mapped once; copies then use the mapped pointer. Pageable memory
 * is ordinary page-aligned memory. Both are zeroed by parallel threads, so
 * that under a NUMA memory policy (--membind, or numactl -m) the pages land
 * where the policy says and next to the threads that will touch them.
 */
#ifndef MB_HOSTMEM_H
#define MB_HOSTMEM_H

#include <stdbool.h>
#include <stdint.h>

#include "mb_cl.h"

struct mb_hostbuf {
	void *ptr; /* host address (the mapping, when pinned) */
	uint64_t bytes;
	bool pinned;
	cl_mem mem; /* pinned: the CL_MEM_ALLOC_HOST_PTR buffer */
	const struct mb_cl *cl;
	char what[32]; /* "grads", for errors */
};

/*
 * Allocate BYTES of zeroed host memory named WHAT, pinned through CL or
 * pageable. Failure is -MB_EFAIL naming WHAT and the size.
 */
int mb_hostbuf_alloc(struct mb_hostbuf *b, const struct mb_cl *cl, uint64_t bytes, bool pinned,
		     const char *what);

/* Move the contents into new memory that is PINNED (as asked) and free the old. */
int mb_hostbuf_move(struct mb_hostbuf *b, bool pinned);

/* Free the memory (unmapping a pinned buffer first). */
void mb_hostbuf_release(struct mb_hostbuf *b);

#endif

/*
 * mb_hostmem: host buffers that cross the bus, pinned or pageable.
 *
 * Pinned memory is what OpenCL offers for it: CL_MEM_ALLOC_HOST_PTR
 * buffers, mapped once; copies then use the mapped pointers. A pinned
 * buffer is an array of such chunks, cut where its caller says (at
 * parameter boundaries, mb_plan_host_chunks), because drivers cap one
 * allocation (CL_DEVICE_MAX_MEM_ALLOC_SIZE: a quarter of device memory on
 * NVIDIA, 4 GiB on Intel). So a pinned buffer is contiguous only within a
 * chunk: mb_hostbuf_at gives an address and how far it runs. Pageable memory
 * is ordinary page-aligned memory, one chunk. Both are zeroed by parallel
 * threads, so that under a NUMA memory policy (--membind, or numactl -m) the
 * pages land where the policy says and next to the threads that will touch
 * them.
 */
#ifndef MB_HOSTMEM_H
#define MB_HOSTMEM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mb_cl.h"
#include "mb_hostopt.h"

struct mb_hostchunk {
	uint64_t off, bytes; /* of the buffer */
	void *ptr;	     /* host address (the mapping, when pinned) */
	cl_mem mem;	     /* pinned: its CL_MEM_ALLOC_HOST_PTR buffer */
};

struct mb_hostbuf {
	void *ptr; /* the first chunk's address: the whole buffer when it is one chunk */
	uint64_t bytes;
	bool pinned;
	struct mb_hostchunk *chunks;
	struct mb_span *spans; /* the same chunks, for mb_checksum_spans */
	size_t nchunks;
	uint64_t *cuts; /* where a pinned copy is cut (chunk ends), for mb_hostbuf_move */
	size_t ncuts;
	const struct mb_cl *cl;
	char what[32]; /* "grads", for errors */
};

/*
 * Allocate BYTES of zeroed host memory named WHAT, pinned through CL or
 * pageable, in one chunk. Failure is -MB_EFAIL naming WHAT and the size.
 */
int mb_hostbuf_alloc(struct mb_hostbuf *b, const struct mb_cl *cl, uint64_t bytes, bool pinned,
		     const char *what);

/*
 * The same, cut when pinned into chunks that end at CUTS[0..NCUTS) (rising,
 * the last one BYTES; NCUTS 0: one chunk). The cuts are kept for
 * mb_hostbuf_move. A chunk larger than the device allocates at once is
 * refused, naming WHAT, the chunk and the maximum.
 */
int mb_hostbuf_alloc_cut(struct mb_hostbuf *b, const struct mb_cl *cl, uint64_t bytes, bool pinned,
			 const char *what, const uint64_t *cuts, size_t ncuts);

/* Move the contents into new memory that is PINNED (as asked) and free the old. */
int mb_hostbuf_move(struct mb_hostbuf *b, bool pinned);

/*
 * The address of byte OFF of B (below its size), and into *run (if not
 * NULL) how many bytes from there are contiguous: to the end of its chunk.
 */
void *mb_hostbuf_at(const struct mb_hostbuf *b, uint64_t off, uint64_t *run);

/* The checksum of B's bytes (mb_checksum of them, however they are cut), from H. */
uint64_t mb_hostbuf_checksum(const struct mb_hostbuf *b, uint64_t h);

/* Free the memory (unmapping the pinned chunks first). */
void mb_hostbuf_release(struct mb_hostbuf *b);

#endif

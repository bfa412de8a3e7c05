/*
 * mb_bandwidth: how fast bytes cross between host and device, per copy size,
 * direction (H2D, D2H, or both at once) and kind of host memory (pageable or
 * pinned), timed by the device's events and by the host clock, after a
 * warm-up, over several reps.
 *
 * "Both" runs each direction from a host thread of its own, on a queue of its
 * own (H2D on the compute queue, D2H on the copy queue), each copy started
 * with the other's at a barrier: a driver whose pageable copies are
 * synchronous (NVIDIA's returns from the enqueue only once the copy is done)
 * would otherwise run the two directions one after the other.
 *
 * The two clocks can disagree on purpose. The host clock (around enqueue and
 * finish) is what a caller waits; the events time what the driver says the
 * copy took, which for a pageable copy that the driver stages through a
 * pinned buffer of its own may be only the DMA. A device time the driver
 * cannot give is not read as 0: its rate is NaN and the result says why.
 *
 * The host buffers are mb_hostbuf's: page-aligned, first touched by the
 * process's own (bound) threads, so they sit where the NUMA binding says.
 * They are filled with non-zero data before anything is timed.
 */
#ifndef MB_BANDWIDTH_H
#define MB_BANDWIDTH_H

#include <stdbool.h>
#include <stdint.h>

#include "mb_cl.h"
#include "mb_stats.h"

enum mb_bw_dir { MB_BW_H2D, MB_BW_D2H, MB_BW_BOTH, MB_BW_NDIRS };

/* "H2D", "D2H", "both" */
extern const char *const mb_bw_dir_names[MB_BW_NDIRS];

/*
 * A copy faster than this many times the host's own memcpy of the same size
 * did not move the bytes (a zero-copy mapping): a transfer has to read or
 * write host memory, which memcpy already does at close to its full speed.
 */
#define MB_BW_ZERO_COPY_FACTOR 4.0

struct mb_bw_result {
	uint64_t bytes; /* of one copy; "both" moves it each way, and counts twice that */
	enum mb_bw_dir dir;
	bool pinned;
	unsigned reps;
	unsigned threads; /* host threads that enqueued the copies: 1, or 2 for "both" */
	/* from the first event's START to the last one's END; NaN when the driver gave no time */
	struct mb_spread device_gbs;
	/* host clock: "both" from the earlier thread's enqueue to the later one's finish */
	struct mb_spread host_gbs;
	/*
	 * The timed copies' bytes over their summed times, by the events
	 * (NaN where the driver gave none) and by the host clock: the rate of
	 * copies of two kinds together (mb_bw_measure_spread's), where the
	 * median is one kind's slowest or the other's fastest
	 */
	double device_overall_gbs, host_overall_gbs;
	double memcpy_gbs; /* the host's fastest memcpy of the same size (one or all threads) */
	bool zero_copy; /* implausibly fast (by the events, else the host clock): not bandwidth */
	char device_error[512]; /* why device_gbs is NaN (the first event refused); "" if it is not
				 */
};

/* Whether a copy at GBS is too fast to be a transfer, beside a memcpy at MEMCPY_GBS. */
bool mb_bw_zero_copy(double gbs, double memcpy_gbs);

/* The host buffers and device buffers that the copies of up to MAX_BYTES use. */
struct mb_bw_buffers;

/*
 * Allocate them on CL (host memory PINNED or pageable), filled with
 * non-zero data. Failure is -MB_EFAIL naming the buffer and the size.
 */
int mb_bw_buffers_new(const struct mb_cl *cl, uint64_t max_bytes, bool pinned,
		      struct mb_bw_buffers **out);
void mb_bw_buffers_free(struct mb_bw_buffers *b);

/*
 * Time REPS copies of BYTES (at most the buffers' size) in direction DIR,
 * after one untimed copy, into *r. A driver that gives no event time is not
 * a failure: r->device_gbs is NaN and r->device_error says why. A failed
 * copy, or threads that cannot be started, is -MB_EFAIL.
 */
int mb_bw_measure(struct mb_bw_buffers *b, uint64_t bytes, enum mb_bw_dir dir, unsigned reps,
		  struct mb_bw_result *r);

/*
 * The same, each copy of BYTES at the next place of the buffers, around
 * them (copy i at offset i x BYTES, modulo the whole BYTES that fit), into
 * memory last touched a lap before, which no cache smaller than the
 * buffers holds; every other copy's source (the odd copies') is written,
 * untimed, 4 MiB of copies before it (fewer where the buffers hold fewer,
 * and for the first few): by the host for an H2D, by the device (a fill on
 * the copy queue) for a D2H, copy i's bytes all i % 255 + 1. That is how a
 * step copies: about half of it what it has just produced (an update, the
 * bf16 params the host optimizer wrote), still in the last-level cache,
 * half what it produced long before (the momentum, the grads). On a CPU
 * device, where a copy is a memcpy, a source in the cache makes a 1 MiB
 * copy 1.3-1.7x faster than one of memory that no cache holds. The two
 * kinds' figure together is r->device_overall_gbs (or host_overall_gbs).
 * r->memcpy_gbs is a memcpy of the whole buffers.
 */
int mb_bw_measure_spread(struct mb_bw_buffers *b, uint64_t bytes, enum mb_bw_dir dir, unsigned reps,
			 struct mb_bw_result *r);

/*
 * The byte at OFF of direction DIR's target (H2D: the device buffer, read
 * back; D2H: the host buffer) into *OUT: what the last copy there moved.
 * "Both" (either), OFF past the buffers, or a failed read is -MB_EFAIL.
 */
int mb_bw_target_at(const struct mb_bw_buffers *b, enum mb_bw_dir dir, uint64_t off,
		    unsigned char *out);

#endif

/*
 * mb_race: the step's race checker. Every operation the schedule makes
 * through mb_engine declares the byte spans it reads and writes, of a device
 * buffer or of a host buffer; the order between operations is what in-order
 * queues, an enqueue after the host's own work, `after` edges, markers, host
 * waits, finishes and blocking reads give, kept as one vector clock for the
 * host and one for each queue (as PyTorch's CUDA Sanitizer keeps one a
 * stream, but over byte spans, with the host as one more party). Two
 * overlapping accesses, one of them a write, with no order between them are
 * a hazard: the access that finds it fails with both operations named.
 *
 * The engine layer (mb_engine.c) drives it, so both engines carry it; it
 * knows nothing of OpenCL. What it cannot see: a driver's own bugs, and
 * memory an operation does not declare (an engine's own workspaces, the
 * forward/backward's buffers, the collectives that are not replayed).
 */
#ifndef MB_RACE_H
#define MB_RACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The parties that order operations: the queues 0 .. MB_RACE_HOST - 1, then the host. */
#define MB_RACE_HOST	 3
#define MB_RACE_NPARTIES 4

/* A span that runs to the end of its buffer, whatever its size. */
#define MB_RACE_ALL UINT64_MAX

struct mb_race;

/*
 * An operation as a report names it: OP ("copy h2d", "work ns", "host
 * optimizer"), its PHASE ("h2d", "-"), and the unit it serves (a
 * parameter's name, "momentum to the host"; NULL: none).
 */
struct mb_race_op {
	const char *op;
	const char *phase;
	const char *unit;
};

/* A new checker into *OUT (freed with mb_race_free); -MB_EFAIL without memory. */
int mb_race_new(struct mb_race **out);
void mb_race_free(struct mb_race *r); /* NULL: nothing */

/*
 * Name the buffer KEY (a device handle, or a host buffer's mb_race_host_key)
 * in reports; NAME is copied.
 */
void mb_race_name(struct mb_race *r, const void *key, const char *name);

/* The key of host buffer B (an mb_host_buffer), distinct from every device handle. */
const void *mb_race_host_key(unsigned b);

/*
 * Party P (a queue, or MB_RACE_HOST) begins operation OP: a queue's command
 * is enqueued by the host, so it comes after all the host has done and
 * seen. Its accesses follow (mb_race_access); -MB_EFAIL without memory.
 */
int mb_race_begin(struct mb_race *r, unsigned p, const struct mb_race_op *op);

/*
 * The operation begun last reads (or, with WRITE, writes) BYTES of buffer
 * KEY from byte OFF (BYTES MB_RACE_ALL: to its end). A conflicting access
 * with no order to it is a hazard: -MB_EFAIL with both operations, the
 * buffer and the spans in the message (mb_err). After a hazard nothing more
 * is checked until the step ends, so that the first report stands.
 */
int mb_race_access(struct mb_race *r, const void *key, uint64_t off, uint64_t bytes, bool write);

/* The operation begun last made event ID (1, 2, ...: mb_engine's ids). */
int mb_race_event(struct mb_race *r, size_t id);

/*
 * Party P (a queue, or the host) waits for event ID: all it had seen is seen
 * by P. A queue that waits for another queue's event that was never flushed
 * fails (-MB_EFAIL): a driver need not submit it, and may wait for ever.
 * The host's wait submits the event's queue.
 */
int mb_race_wait(struct mb_race *r, unsigned p, size_t id);

/* Queue Q's commands so far are submitted to the device (a flush). */
void mb_race_flush(struct mb_race *r, unsigned q);

/* The host waits for everything queue Q has been given (a finish, a blocking read). */
void mb_race_finish(struct mb_race *r, unsigned q);

/* Buffer KEY is handed back: a write of all of it by the host, then forgotten. */
int mb_race_release(struct mb_race *r, const void *key, const struct mb_race_op *op);

/* The step's events are forgotten (ids start again); accesses are kept. */
void mb_race_end_step(struct mb_race *r);

/* How many accesses it has checked (the tests see that it checks at all). */
uint64_t mb_race_checked(const struct mb_race *r);

#endif

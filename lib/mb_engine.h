/*
 * mb_engine: what the step's schedule (mb_sched) needs of a device, and
 * nothing more: device buffers, copies of a span between a host buffer and
 * a device buffer on a queue, kinds of device work of so many elements or
 * FLOPs, events to wait on (by the host, or by a queue), the host's own
 * work, a clock, and the times of the commands it ran.
 *
 * Two engines implement it, as fio's ioengines plug in through a struct of
 * function pointers: the OpenCL engine (mb_engine_cl.c) runs each operation
 * on a device, and the model engine (mb_engine_model.c) times it on a
 * discrete-event model of the device from a profile (mb_profile), with no
 * device: that is predict. One schedule, run on either, makes the same
 * operations in the same order.
 *
 * This file is also the one layer between the schedule and an engine: each
 * mb_engine_* call below checks nothing more than the engine does, keeps
 * the step's events under ids of its own (so that two engines' logs
 * compare), the spans of commands to time by phase, and, when asked, a log
 * of every operation (tests).
 *
 * Every call returns 0 or a negative error (mb_err), after which the
 * schedule calls mb_engine_abort and stops; an event id it hands out lives
 * until mb_engine_end_step.
 */
#ifndef MB_ENGINE_H
#define MB_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mb_fwdbwd.h"
#include "mb_phase.h"
#include "mb_plan.h"
#include "mb_race.h"

/* mb_cl's three in-order queues. */
enum mb_queue { MB_QUEUE_COMPUTE, MB_QUEUE_COPY, MB_QUEUE_PREFETCH, MB_NQUEUES };

/* A command that others can wait on: 1 + its place in the step's events; 0: none. */
typedef size_t mb_event;

/* A device buffer: an engine's own handle (a cl_mem, or a token of the model's). */
typedef struct mb_devbuf *mb_devbuf;

/* The kinds of device work, each one kernel or a short fixed run of them. */
#define MB_WORKS(X)                                                                        \
	X(GRADS, "grads", "fp32 gradients made from the seed (mb_rng) into OUT")           \
	X(CAST, "cast", "fp32 IN rounded to bf16 OUT (OUT_OFF in bf16 elements)")          \
	X(WIDEN, "widen", "bf16 IN (IN_OFF in bf16 elements) widened to fp32 OUT")         \
	X(SUMSQ, "sumsq", "the norm's partial sums of bf16 IN into OUT at OUT_OFF")        \
	X(ZERO, "zero", "N bytes of OUT from byte OUT_OFF set to zero")                    \
	X(MOMENTUM, "momentum", "momentum and Nesterov: grads IN, momentum OUT, in place") \
	X(NS, "ns", "Newton-Schulz from IN to OUT, ROWS x COLS")                           \
	X(COLLECTIVE, "collective",                                                        \
	  "N bytes to and from the other ranks' GPUs (NCCL): no host, so not replayed")
#define MB_WORK_ENUM_(e, ...) MB_WORK_##e,
enum mb_work_kind { MB_WORKS(MB_WORK_ENUM_) MB_NWORKS };
#undef MB_WORK_ENUM_

/*
 * One piece of device work. Offsets count elements of the buffer's type
 * as each kind says; N elements (ZERO: bytes). GRADS: the rng's STREAM and
 * first index FIRST, scaled by SCALE. MOMENTUM: BF16 momentum or fp32, with
 * BETA. The work runs on QUEUE after AFTER (an event of another queue, or
 * 0), and is timed as PHASE (MB_NPHASES: not timed).
 */
struct mb_work {
	enum mb_work_kind kind;
	enum mb_queue queue;
	mb_devbuf in, out;
	uint64_t in_off, out_off, n;
	uint64_t rows, cols;
	uint64_t seed, stream, first;
	float scale, beta;
	bool bf16;
	mb_event after;
	enum mb_phase phase;
	const char *what; /* the unit it serves, in the race checker's reports; NULL: none */
};

/*
 * A copy of BYTES between host buffer HOST at byte HOST_OFF and device
 * buffer DEV at byte DEV_OFF, TO_DEVICE or back, on QUEUE after AFTER (0:
 * none), timed as PHASE (MB_NPHASES: not timed). WHAT names it in errors.
 */
struct mb_copy {
	bool to_device;
	enum mb_queue queue;
	enum mb_host_buffer host;
	uint64_t host_off;
	mb_devbuf dev;
	uint64_t dev_off, bytes;
	mb_event after;
	enum mb_phase phase;
	const char *what;
};

/* BYTES of host buffer BUF from byte OFF (MB_RACE_ALL: to its end) that the host reads or writes.
 */
struct mb_host_access {
	enum mb_host_buffer buf;
	uint64_t off, bytes;
	bool write;
};

/*
 * The host's own work: RUN(ARG, SCALE) on a real device, or on the model
 * BYTES through the host optimizer's rate and STREAMED through memcpy's.
 * It touches the NACCESS spans of ACCESS (the race checker's).
 */
struct mb_host_work {
	void (*run)(void *arg, float scale);
	void *arg;
	float scale;
	double bytes, streamed;
	const struct mb_host_access *access;
	size_t naccess;
};

struct mb_engine;

/*
 * An engine's operations, on NATIVE handles of its own for the commands
 * (size_t: 0 none). The layer above maps them to mb_event ids.
 */
struct mb_engine_ops {
	const char *name;
	int (*alloc)(struct mb_engine *e, uint64_t bytes, const char *tag, mb_devbuf *out);
	void (*free)(struct mb_engine *e, mb_devbuf buf);
	int (*copy)(struct mb_engine *e, const struct mb_copy *c, size_t after, size_t *done);
	/* a blocking read of BYTES from DEV at DEV_OFF into plain host memory DST, on Q */
	int (*read)(struct mb_engine *e, enum mb_queue q, mb_devbuf dev, uint64_t dev_off,
		    uint64_t bytes, void *dst);
	int (*work)(struct mb_engine *e, const struct mb_work *w, size_t after, size_t *done);
	/* the synthetic forward/backward, HOOK called as mb_fwdbwd_run calls it */
	int (*fwd_bwd)(struct mb_engine *e, const struct mb_fwdbwd_hook *hook, double *forward_s,
		       double *backward_s);
	int (*wait)(struct mb_engine *e, size_t ev, const char *what); /* the host waits */
	int (*after)(struct mb_engine *e, enum mb_queue q, size_t ev); /* Q waits */
	int (*marker)(struct mb_engine *e, enum mb_queue q, size_t *done);
	int (*flush)(struct mb_engine *e, enum mb_queue q);
	int (*finish)(struct mb_engine *e, enum mb_queue q);
	int (*pin)(struct mb_engine *e, enum mb_host_buffer b);
	void (*host)(struct mb_engine *e, const struct mb_host_work *h);
	double (*now)(struct mb_engine *e);
	void (*phase)(struct mb_engine *e, const char *name);
	/* START and END of the commands FIRST to LAST, seconds on one clock */
	int (*interval)(struct mb_engine *e, size_t first, size_t last, const char *what,
			double *start, double *end);
	void (*abort)(struct mb_engine *e);
	void (*end_step)(struct mb_engine *e);
	void (*destroy)(struct mb_engine *e);
};

/* One operation as the log records it (mb_engine_log_*). */
struct mb_engine_op {
	char op[16];	 /* "copy", "work", "wait", ... */
	char detail[48]; /* the copy's host buffer and direction, the work's kind, the phase */
	int queue;	 /* -1: none */
	uint64_t amount; /* bytes, elements or FLOPs */
	mb_event waits;	 /* the event it waits on; 0: none */
	mb_event made;	 /* the event it made; 0: none */
};

struct mb_engine_buf {
	mb_devbuf buf;
	uint64_t bytes;
};

struct mb_engine_span {
	size_t first, last; /* native */
	enum mb_phase phase;
};

/* The part every engine shares; an engine's own state follows it. */
struct mb_engine {
	const struct mb_engine_ops *ops;
	size_t *events; /* native handle of each mb_event - 1 */
	size_t nevents, events_alloc;
	struct mb_engine_span *spans;
	size_t nspans, spans_alloc;
	struct mb_engine_op *log; /* NULL: no log */
	size_t nlog, log_alloc;
	bool logging;
	const struct mb_fwdbwd_hook *hook; /* the schedule's, while the forward/backward runs */
	struct mb_engine_buf *bufs;	   /* the schedule's device buffers alive, by size */
	size_t nbufs, bufs_alloc;
	uint64_t live_bytes, peak_bytes; /* theirs now, and most since the last phase mark */
	struct mb_race *race;		 /* the race checker; NULL: off */
};

/* ---- for the schedule ---- */

int mb_engine_alloc(struct mb_engine *e, uint64_t bytes, const char *tag, mb_devbuf *out);
/*
 * BUF (NULL: nothing) back to the engine, whose pool may hand it out at
 * once: the race checker holds it as the host's write of all of it.
 * The buffer is freed whatever it returns.
 */
int mb_engine_free(struct mb_engine *e, mb_devbuf buf);
/* *done (if not NULL) gets the copy's last command. */
int mb_engine_copy(struct mb_engine *e, const struct mb_copy *c, mb_event *done);
int mb_engine_read(struct mb_engine *e, enum mb_queue q, mb_devbuf dev, uint64_t dev_off,
		   uint64_t bytes, void *dst);
/* *done (if not NULL) gets the work's last command. */
int mb_engine_work(struct mb_engine *e, const struct mb_work *w, mb_event *done);
int mb_engine_fwd_bwd(struct mb_engine *e, const struct mb_fwdbwd_hook *hook, double *forward_s,
		      double *backward_s);
/* The host waits for EV (0: nothing); WHAT names it in errors. */
int mb_engine_wait(struct mb_engine *e, mb_event ev, const char *what);
int mb_engine_after(struct mb_engine *e, enum mb_queue q, mb_event ev); /* 0: nothing */
int mb_engine_marker(struct mb_engine *e, enum mb_queue q, mb_event *done);
int mb_engine_flush(struct mb_engine *e, enum mb_queue q);
int mb_engine_finish(struct mb_engine *e, enum mb_queue q);
/* Host buffer B pinned, if it is not (a checkpoint load left it pageable). */
int mb_engine_pin(struct mb_engine *e, enum mb_host_buffer b);
int mb_engine_host(struct mb_engine *e, const struct mb_host_work *h);
/* The host reads or writes the N spans of A outside the step (WHAT: "checkpoint"). */
int mb_engine_touch(struct mb_engine *e, const char *what, const struct mb_host_access *a,
		    size_t n);
double mb_engine_now(struct mb_engine *e);
/* The device-memory phase the ledger counts from now on ("backward", "step"). */
void mb_engine_phase(struct mb_engine *e, const char *name);

/*
 * The most bytes of the schedule's own device buffers (mb_engine_alloc's)
 * alive at once since the last mb_engine_phase: on either engine, what the
 * plan says that part of the phase's peak is.
 */
uint64_t mb_engine_peak_bytes(const struct mb_engine *e);
/* After a failure: every queue stopped, errors ignored. */
void mb_engine_abort(struct mb_engine *e);

/*
 * After a step: the spans summed by phase into *P, and the part of the D2H
 * time the compute queue was busy too into p->d2h_hidden_s. A span whose
 * times the engine cannot give makes its phase NaN; the first such reason
 * goes into WHY (LEN bytes). Then the step's events are forgotten.
 */
int mb_engine_end_step(struct mb_engine *e, struct mb_phase_times *p, char *why, size_t len);

/* Which engine E is: "opencl" (a device's commands) or "model" (mb_engine_model). */
const char *mb_engine_kind(const struct mb_engine *e);
/* The spans of the step so far (before mb_engine_end_step), in the order they were timed. */
size_t mb_engine_nspans(const struct mb_engine *e);
/*
 * Span I (below mb_engine_nspans) of the step: its phase, and its START and
 * END, seconds on the engine's clock (END no earlier than START); 0, or a
 * failure where the engine cannot give them, with its message.
 */
int mb_engine_span_times(struct mb_engine *e, size_t i, enum mb_phase *phase, double *start,
			 double *end);

void mb_engine_destroy(struct mb_engine *e); /* NULL: nothing */

/* ---- for the engines ---- */

/* Time the native commands FIRST to LAST (LAST 0: FIRST alone) as PHASE. */
int mb_engine_span(struct mb_engine *e, size_t first, size_t last, enum mb_phase phase);

/* Release what the shared part holds (an engine's destroy calls it). */
void mb_engine_release(struct mb_engine *e);

/* ---- the race checker (mb_race) ---- */

/*
 * From now on, check every operation's accesses against the order the
 * queues, events and host waits give them: an operation that races with
 * an earlier one fails, naming both. -MB_EFAIL without memory.
 */
int mb_engine_race_start(struct mb_engine *e);

/* Name a device buffer that the schedule did not allocate (the resident params) in reports. */
void mb_engine_name(struct mb_engine *e, mb_devbuf buf, const char *tag);

/* ---- the log, for tests ---- */

/* Start keeping a log of every operation from now on. */
void mb_engine_log_start(struct mb_engine *e);

/* Hand the log kept so far to the caller (*LOG, freed by it; *N entries); the log starts anew. */
int mb_engine_log_take(struct mb_engine *e, struct mb_engine_op **log, size_t *n);

/* The name of work kind K ("ns"). */
const char *mb_work_name(enum mb_work_kind k);

#endif

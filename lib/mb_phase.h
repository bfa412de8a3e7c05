/*
 * mb_phase: the table of the phases a step is timed in, which everything
 * reads: the step's timeline (mb_step: the kinds of its device spans, and
 * which of them keep the compute queue busy while the writeback runs), the
 * structs that hold a phase's time (mb_step's struct mb_phase_times, the
 * results row, a cell's means: MB_PHASE_FIELDS), a run's means (mb_run),
 * the results' columns (mb_csv: the seconds column FIELD and the model's
 * pred_FIELD), compare's timings, predict's and report's phase tables and
 * plot's bars of the apply. A phase is a row: its field (also its CSV
 * column, in seconds, the unit its name ends in), its name in tables, the
 * clock that times it (HOST: the host clock around it; EVENTS: the
 * profiling events of its own commands, each a span of the step's
 * timeline), whether it is part of the Muon apply, what one of its commands
 * is (for errors about its events; NULL on the host clock) and what it
 * times. Adding a phase is a row here, what times it (a span of its kind in
 * the step, or the host clock there) and the model's time for it in
 * mb_predict, and a format_version bump for its new columns.
 */
#ifndef MB_PHASE_H
#define MB_PHASE_H

#include <stdbool.h>

/*
 * X(ENUM, field, name, clock, apply, span, what). In two parts only because
 * the results file (format 10 and 11) has d2h_hidden_frac, derived from
 * d2h, between them.
 */
#define MB_PHASES_TO_D2H(X)                                                                \
	X(FORWARD, forward_s, "forward", HOST, false, NULL,                                \
	  "the synthetic forward's GEMMs, device synchronized; 0 without --fwd-bwd")       \
	X(BACKWARD, backward_s, "backward", HOST, false, NULL,                             \
	  "the synthetic backward's GEMMs and the backward stand-in's gradient buckets")   \
	X(H2D, h2d_s, "h2d", EVENTS, true, "a gather copy",                                \
	  "the apply's gathers: grads and momentum in")                                    \
	X(MOMENTUM, momentum_s, "momentum", EVENTS, true, "the momentum kernel",           \
	  "momentum and Nesterov, and ZeRO-3's bf16 copy of the grads")                    \
	X(NS, ns_s, "ns", EVENTS, true, "a Newton-Schulz", "Newton-Schulz on each matrix") \
	X(D2H, d2h_s, "d2h", EVENTS, true, "a writeback copy",                             \
	  "the writeback: update and momentum out")
#define MB_PHASES_AFTER_D2H(X)                                                      \
	X(HOST_OPT, host_opt_s, "host_opt", HOST, false, NULL,                      \
	  "Muon's update and AdamW on the host, the clipping, the bf16 staging")    \
	X(PARAMS_H2D, params_h2d_s, "params_h2d", EVENTS, false, "the params copy", \
	  "the bf16 staging to the resident device params")                         \
	MB_TEST_PHASE_ROW_(X)
#define MB_PHASES(X) MB_PHASES_TO_D2H(X) MB_PHASES_AFTER_D2H(X)

/*
 * A row that only tests build (-DMB_TEST_PHASE, tests/variant_row.sh): an
 * apply phase that no command is timed as (0 s, and 0 predicted), to show
 * that a row is all it takes for a phase to have its columns in the results
 * and to show in report, compare and plot.
 */
#ifdef MB_TEST_PHASE
#define MB_TEST_PHASE_ROW_(X) \
	X(PROBE, probe_s, "probe", EVENTS, true, "a probe", "test only: no command is timed as it")
#else
#define MB_TEST_PHASE_ROW_(X)
#endif

#define MB_PHASE_ENUM_(e, ...) MB_PHASE_##e,
enum mb_phase { MB_PHASES(MB_PHASE_ENUM_) MB_NPHASES };

/* The clocks that time a phase. */
enum mb_phase_clock {
	MB_PHASE_CLOCK_HOST,   /* the host clock, the device synchronized */
	MB_PHASE_CLOCK_EVENTS, /* the profiling events of its commands: spans of the timeline */
};

struct mb_phase_info {
	const char *name;   /* "h2d" */
	const char *column; /* "h2d_s": seconds */
	enum mb_phase_clock clock;
	bool apply;	  /* part of the Muon apply */
	const char *span; /* "a gather copy": one of its commands; NULL on the host clock */
	const char *what;
};

/*
 * The phases' fields in a struct that holds each phase's time: "forward_s,
 * backward_s, ..., params_h2d_s," to declare them with another after them
 * (double MB_PHASE_FIELDS d2h_hidden_s;); the model's in the results row,
 * "pred_forward_s, ...".
 */
#define MB_PHASE_FIELD_(e, f, ...)	f,
#define MB_PHASE_PRED_FIELD_(e, f, ...) pred_##f,
#define MB_PHASE_FIELDS			MB_PHASES(MB_PHASE_FIELD_)
#define MB_PHASE_PRED_FIELDS		MB_PHASES(MB_PHASE_PRED_FIELD_)

extern const struct mb_phase_info mb_phases[MB_NPHASES];

/*
 * Seconds spent in each phase of a step, from the host clock and from the
 * profiling events of the phase's own commands: from the first one's START
 * to the last one's END. A phase whose events the driver does not time is
 * NaN (n/a), never 0.
 */
struct mb_phase_times {
	/* forward_s, ..., params_h2d_s: the table above, each by its clock; and of d2h_s, the
	 * time the compute queue was busy too */
	double MB_PHASE_FIELDS d2h_hidden_s;
};

#endif

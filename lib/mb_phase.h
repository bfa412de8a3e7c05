/*
 * mb_phase: the table of the phases a step is timed in, which everything
 * reads: the step's phase times (mb_step's struct mb_phase_times), a run's
 * means (mb_run), the results' columns (mb_csv: the seconds column FIELD and
 * the model's pred_FIELD), a cell's means (mb_results), compare's timings,
 * predict's and report's phase tables. A phase is a row: its field (also
 * its CSV column, in seconds, the unit its name ends in), its name in
 * tables, the clock that times it, and what it times. Adding a phase is a
 * row here and its field in the structs that hold one (they fail to
 * compile without it), and a format_version bump for its new columns.
 */
#ifndef MB_PHASE_H
#define MB_PHASE_H

/*
 * X(ENUM, field, name, clock, what). In two parts only because the results
 * file (format 10) has d2h_hidden_frac, derived from d2h, between them.
 */
#define MB_PHASES_TO_D2H(X)                                                                 \
	X(FORWARD, forward_s, "forward", "host clock",                                      \
	  "the synthetic forward's GEMMs, device synchronized; 0 without --fwd-bwd")        \
	X(BACKWARD, backward_s, "backward", "host clock",                                   \
	  "the synthetic backward's GEMMs and the backward stand-in's gradient buckets")    \
	X(H2D, h2d_s, "h2d", "device events", "the apply's gathers: grads and momentum in") \
	X(MOMENTUM, momentum_s, "momentum", "device events",                                \
	  "momentum and Nesterov, and ZeRO-3's bf16 copy of the grads")                     \
	X(NS, ns_s, "ns", "device events", "Newton-Schulz on each matrix")                  \
	X(D2H, d2h_s, "d2h", "device events", "the writeback: update and momentum out")
#define MB_PHASES_AFTER_D2H(X)                                                   \
	X(HOST_OPT, host_opt_s, "host_opt", "host clock",                        \
	  "Muon's update and AdamW on the host, the clipping, the bf16 staging") \
	X(PARAMS_H2D, params_h2d_s, "params_h2d", "device event",                \
	  "the bf16 staging to the resident device params")
#define MB_PHASES(X) MB_PHASES_TO_D2H(X) MB_PHASES_AFTER_D2H(X)

#define MB_PHASE_ENUM_(e, ...) MB_PHASE_##e,
enum mb_phase { MB_PHASES(MB_PHASE_ENUM_) MB_NPHASES };

struct mb_phase_info {
	const char *name;   /* "h2d" */
	const char *column; /* "h2d_s": seconds */
	const char *clock;  /* "device events" or "host clock" */
	const char *what;
};

extern const struct mb_phase_info mb_phases[MB_NPHASES];

#endif

/*
 * mb_timeline: each step's device spans as CSV rows, the run's and the
 * model's alike, to set a run's timeline beside its prediction command by
 * command. A row is a span as the phases are timed (mb_engine's spans: a
 * copy, a kernel or a Newton-Schulz on the device, its phase): which engine
 * ran it (opencl: measured; model: predicted), the cell (stage, variant,
 * gather budget, sub-group size), the run (0: a prediction), the step, the
 * phase, and its start and end in seconds from the step's first span.
 */
#ifndef MB_TIMELINE_H
#define MB_TIMELINE_H

#include <stdbool.h>
#include <stdio.h>

struct mb_engine;
struct mb_step_settings;

struct mb_timeline {
	FILE *f;
	const char *path;
	unsigned run; /* the run the next steps are of; 0: a prediction */
	bool lost;    /* a step's rows could not be written */
};

/* The header row, the columns in order. */
#define MB_TIMELINE_HEADER \
	"engine,stage,variant,gather_budget_bytes,sub_group_size_elems,run,step,phase,start_s,end_s"

/* Open PATH for writing (truncated) and write the header. 0, or a failure with its message. */
int mb_timeline_open(struct mb_timeline *t, const char *path);

/*
 * The spans of the step of E that has just been run under SET (the
 * step-th of its run, 1-based), before mb_engine_end_step forgets them, in
 * the order they started. A span that could not be timed is left out.
 */
void mb_timeline_step(struct mb_timeline *t, struct mb_engine *e,
		      const struct mb_step_settings *set, unsigned long step);

/*
 * Close it (one never opened: nothing), after a command that ends with ERR:
 * ERR where it is a failure already (its message kept), else 0 or the
 * failure of the rows not all written, with its message.
 */
int mb_timeline_close(struct mb_timeline *t, int err);

#endif

/*
 * mb_timeline: each step's device spans as CSV rows (mb_timeline.h).
 */
#include "mb_timeline.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "mb_engine.h"
#include "mb_err.h"
#include "mb_phase.h"
#include "mb_sched.h"
#include "mb_variant.h"

struct span {
	enum mb_phase phase;
	double start, end;
};

static int by_start(const void *x, const void *y)
{
	const struct span *a = x, *b = y;

	return (a->start > b->start) - (a->start < b->start);
}

int mb_timeline_open(struct mb_timeline *t, const char *path)
{
	memset(t, 0, sizeof(*t));
	t->path = path;
	if (!(t->f = fopen(path, "w")))
		return mb_bad_input("--timeline: cannot write '%s': %s", path, strerror(errno));
	fprintf(t->f, "%s\n", MB_TIMELINE_HEADER);
	fflush(t->f);
	return 0;
}

void mb_timeline_step(struct mb_timeline *t, struct mb_engine *e,
		      const struct mb_step_settings *set, unsigned long step)
{
	size_t i, n = 0, all = mb_engine_nspans(e);
	struct span *v;
	double t0;

	if (!t || !t->f || !all)
		return;
	if (!(v = malloc(all * sizeof(*v)))) {
		t->lost = true;
		return;
	}
	for (i = 0; i < all; i++)
		if (!mb_engine_span_times(e, i, &v[n].phase, &v[n].start, &v[n].end))
			n++;
	qsort(v, n, sizeof(*v), by_start);
	t0 = n ? v[0].start : 0;
	for (i = 0; i < n; i++)
		fprintf(t->f, "%s,%u,%s,%llu,%llu,%u,%lu,%s,%.9f,%.9f\n", mb_engine_kind(e),
			set->plan.stage, mb_variant_name(set->variant),
			(unsigned long long)set->plan.gather_budget_bytes,
			(unsigned long long)set->plan.sub_group_size, t->run, step,
			mb_phases[v[i].phase].name, v[i].start - t0, v[i].end - t0);
	fflush(t->f); /* a run that ends halfway keeps its steps' rows */
	free(v);
}

int mb_timeline_close(struct mb_timeline *t, int err)
{
	int failed;

	if (!t->f)
		return err;
	failed = ferror(t->f);
	failed |= fclose(t->f) != 0;
	t->f = NULL;
	if (err || !(failed || t->lost))
		return err;
	return mb_fail("--timeline: '%s' %s", t->path,
		       t->lost ? "misses rows: out of host memory for a step's spans"
			       : "could not be written whole");
}

/*
 * mb_results: tables of comparable rows, cells of (stage, variant).
 */
#include "mb_results.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "mb_err.h"
#include "mb_plan.h"
#include "mb_phase.h"
#include "mb_variant.h"

const char *mb_results_knob_setting(const struct mb_csv_row *r, enum mb_knob k)
{
	unsigned stage = r->stage <= 3 ? (unsigned)r->stage : 0;

	return mb_knob_is_auto(k, r->knob[k], stage) ? "auto" : r->knob[k];
}

const char *mb_results_ns_precision_setting(const struct mb_csv_row *r)
{
	return r->ns_precision[0] ? r->ns_precision : "fp32";
}

const char *mb_results_pinned_alloc_setting(const struct mb_csv_row *r)
{
	return r->pinned_alloc[0] ? r->pinned_alloc : "alloc-host-ptr";
}

/* mb_knob's table: each knob's column a knob */
/* clang-format off */
#define KNOB_ROW_(id, field, ...) \
	{ #field, offsetof(struct mb_csv_row, knob[MB_KNOB_##id]), true, NULL, false, MB_KNOB_##id },

/* The knobs: what a cell's figures depend on, the device aside. */
#define KNOB(name, text) { #name, offsetof(struct mb_csv_row, name), text, NULL, false, -1 }
#define SWEPT(name)	 { #name, offsetof(struct mb_csv_row, name), false, NULL, true, -1 }
/* clang-format on */
static const struct {
	const char *name;
	size_t offset;
	bool text;					   /* else uint64_t */
	const char *(*setting)(const struct mb_csv_row *); /* text compared, if not the column's */
	bool swept; /* a list of run, plan, predict sweeps it */
	int knob;   /* mb_knob's, compared as its setting (mb_results_knob_setting); -1: none */
} knobs[] = {
	KNOB(model, true),
	KNOB(world_size, false), /* compare matches rank with rank, in worlds of one size */
	KNOB(rank, false),
	KNOB(layers, false),
	KNOB(params_total, false),
	KNOB(steps, false),
	KNOB(measure_first, false),
	KNOB(measure_last, false),
	SWEPT(gather_budget_bytes),
	SWEPT(sub_group_size_elems),
	/* clang-format off */
	MB_KNOB_ROW_PIN_MEMORY(KNOB_ROW_)
	/* clang-format on */
	{ "pinned_alloc", offsetof(struct mb_csv_row, pinned_alloc), true,
	  mb_results_pinned_alloc_setting, false, -1 },
	/* mb_knob's table: each knob a knob, the step's, the plan's, the older ones where they were
	 */
	/* clang-format off */
	MB_KNOBS_STEP(KNOB_ROW_)
	MB_KNOBS_PLAN(KNOB_ROW_)
	MB_KNOB_ROW_MOMENTUM_DTYPE(KNOB_ROW_)
	MB_KNOB_ROW_NS_METHOD(KNOB_ROW_)
	/* clang-format on */
	{ "ns_precision", offsetof(struct mb_csv_row, ns_precision), true,
	  mb_results_ns_precision_setting, false, -1 },
	KNOB(ns_rate_gflops, false),
	KNOB(pin_chunk_bytes, false),
	KNOB(reduce_bucket_size, false),
	KNOB(grad_clip, true),
	/* clang-format off */
	MB_KNOB_ROW_PARAMS_BACK(KNOB_ROW_)
	MB_KNOB_ROW_ZERO3_APPLY(KNOB_ROW_)
	/* clang-format on */
	/* clang-format off */
	MB_KNOB_ROW_FWD_BWD(KNOB_ROW_)
	/* clang-format on */
	KNOB(seq, false),
	KNOB(micro_batch, false),
	KNOB(seed, false),
	KNOB(resume_at, false),
};
#undef KNOB
#undef SWEPT

/* Text knob I of R as compared, its column's text P or its setting. */
static const char *setting(size_t i, const struct mb_csv_row *r, const char *p)
{
	if (knobs[i].knob >= 0)
		return mb_results_knob_setting(r, (enum mb_knob)knobs[i].knob);
	return knobs[i].setting ? knobs[i].setting(r) : p;
}

/* A whole-number knob as text: "none" where it is not known (MB_CSV_UNKNOWN, an empty field). */
static const char *u64_text(char buf[24], uint64_t u)
{
	if (u == MB_CSV_UNKNOWN)
		return "none";
	snprintf(buf, 24, "%llu", (unsigned long long)u);
	return buf;
}

/* The knobs that differ between A and B, as mb_results_knob_differences; the swept too if ALL. */
static size_t differences(const struct mb_csv_row *a, const struct mb_csv_row *b, bool all,
			  char *buf, size_t len)
{
	size_t i, n = 0, used = 0;

	if (len)
		buf[0] = '\0';
	for (i = 0; i < sizeof(knobs) / sizeof(knobs[0]); i++) {
		const char *pa = (const char *)a + knobs[i].offset,
			   *pb = (const char *)b + knobs[i].offset;
		uint64_t ua, ub;
		int w = 0;

		if (knobs[i].swept && !all)
			continue;
		if (knobs[i].text) {
			pa = setting(i, a, pa);
			pb = setting(i, b, pb);
			if (!strcmp(pa, pb))
				continue;
			if (used < len)
				w = snprintf(buf + used, len - used, "%s%s %.64s -> %.64s",
					     n ? "; " : "", knobs[i].name, pa, pb);
		} else {
			char sa[24], sb[24];

			memcpy(&ua, pa, sizeof(ua));
			memcpy(&ub, pb, sizeof(ub));
			if (ua == ub)
				continue;
			if (used < len)
				w = snprintf(buf + used, len - used, "%s%s %s -> %s", n ? "; " : "",
					     knobs[i].name, u64_text(sa, ua), u64_text(sb, ub));
		}
		used += w > 0 ? (size_t)w : 0;
		n++;
	}
	return n;
}

size_t mb_results_nknobs(void)
{
	return sizeof(knobs) / sizeof(knobs[0]);
}

const char *mb_results_knob(size_t i, const struct mb_csv_row *r, char *buf, size_t len, bool *text)
{
	const char *p = (const char *)r + knobs[i].offset;
	uint64_t u;

	*text = knobs[i].text;
	if (knobs[i].text) {
		snprintf(buf, len, "%s", setting(i, r, p));
	} else {
		memcpy(&u, p, sizeof(u));
		if (u == MB_CSV_UNKNOWN)
			buf[0] = '\0';
		else
			snprintf(buf, len, "%llu", (unsigned long long)u);
	}
	return knobs[i].name;
}

size_t mb_results_knob_differences(const struct mb_csv_row *a, const struct mb_csv_row *b,
				   char *buf, size_t len)
{
	return differences(a, b, true, buf, len);
}

bool mb_results_same_knobs(const struct mb_csv_row *a, const struct mb_csv_row *b)
{
	return !differences(a, b, true, NULL, 0);
}

bool mb_results_other_rank(const struct mb_csv_row *a, const struct mb_csv_row *b)
{
	struct mb_csv_row *as_a = malloc(sizeof(*as_a));
	bool same;

	if (!as_a)
		return false;
	*as_a = *b;
	as_a->rank = a->rank;
	same = a->world_size == b->world_size && mb_results_same_knobs(a, as_a);
	free(as_a);
	return same;
}

/*
 * Whether A and B may share a table: the same device, its CLBlast tuning,
 * host and binding, and knobs.
 */
bool mb_results_same_device(const struct mb_csv_row *a, const struct mb_csv_row *b)
{
	return !strcmp(a->platform, b->platform) && !strcmp(a->device, b->device) &&
	       !strcmp(a->driver, b->driver) && !strcmp(a->tuning, b->tuning) &&
	       !strcmp(a->tuning_match, b->tuning_match);
}

/* Whether A and B ran on the same device, tuning, host and binding. */
static bool same_place(const struct mb_csv_row *a, const struct mb_csv_row *b)
{
	return mb_results_same_device(a, b) && !strcmp(a->host, b->host) &&
	       !strcmp(a->cpus, b->cpus) && !strcmp(a->mems, b->mems) &&
	       !strcmp(a->binding, b->binding);
}

static bool comparable(const struct mb_csv_row *a, const struct mb_csv_row *b)
{
	return same_place(a, b) && mb_results_same_knobs(a, b);
}

bool mb_results_same_but_swept(const struct mb_csv_row *a, const struct mb_csv_row *b)
{
	return same_place(a, b) && !differences(a, b, false, NULL, 0);
}

static int variant_rank(const char *v)
{
	int i = mb_variant_find(v, strlen(v));

	return i < 0 ? MB_NVARIANTS : i;
}

static int cmp_cell(const void *x, const void *y)
{
	const struct mb_cell *a = x, *b = y;

	if (a->stage != b->stage)
		return a->stage < b->stage ? -1 : 1;
	return variant_rank(a->variant) - variant_rank(b->variant);
}

static struct mb_cell *find_or_add(struct mb_table *t, const struct mb_csv_row *row)
{
	struct mb_cell *c;
	size_t i;

	for (i = 0; i < t->ncells; i++)
		if (t->cells[i].stage == row->stage && !strcmp(t->cells[i].variant, row->variant))
			return &t->cells[i];
	c = realloc(t->cells, (t->ncells + 1) * sizeof(*c));
	if (!c)
		return NULL;
	t->cells = c;
	c = &t->cells[t->ncells++];
	memset(c, 0, sizeof(*c));
	c->stage = (unsigned)row->stage;
	memcpy(c->variant, row->variant, sizeof(c->variant));
	c->used_base_bytes = c->used_peak_bytes = MB_CSV_UNKNOWN;
	return c;
}

static struct mb_csv_row *copy_row(const struct mb_csv_row *row)
{
	struct mb_csv_row *copy = malloc(sizeof(*copy));

	if (copy)
		*copy = *row;
	return copy;
}

static uint64_t max_u64(uint64_t a, uint64_t b)
{
	return a > b ? a : b;
}

/* ROW's figures into C's: sums until mb_results_finish, maxima. */
static void add_figures(struct mb_cell *c, const struct mb_csv_row *r)
{
	c->iter_mean_s += r->iter_mean_s;
	c->apply_mean_s += r->apply_mean_s;
	c->peak_bytes = max_u64(c->peak_bytes, r->peak_device_bytes);
	c->peak_forward_bytes = max_u64(c->peak_forward_bytes, r->peak_forward_bytes);
	c->peak_backward_bytes = max_u64(c->peak_backward_bytes, r->peak_backward_bytes);
	c->peak_step_bytes = max_u64(c->peak_step_bytes, r->peak_step_bytes);
	c->own_peak_bytes = max_u64(c->own_peak_bytes, r->peak_device_own_bytes);
	c->own_peak_forward_bytes = max_u64(c->own_peak_forward_bytes, r->peak_forward_own_bytes);
	c->own_peak_backward_bytes =
		max_u64(c->own_peak_backward_bytes, r->peak_backward_own_bytes);
	c->own_peak_step_bytes = max_u64(c->own_peak_step_bytes, r->peak_step_own_bytes);
	if (r->device_used_base_bytes < c->used_base_bytes) /* MB_CSV_UNKNOWN is the largest */
		c->used_base_bytes = r->device_used_base_bytes;
	if (r->device_used_peak_bytes != MB_CSV_UNKNOWN &&
	    (c->used_peak_bytes == MB_CSV_UNKNOWN ||
	     r->device_used_peak_bytes > c->used_peak_bytes))
		c->used_peak_bytes = r->device_used_peak_bytes;
#define ADD_(e, f, ...) c->phase.f += r->f;
	MB_PHASES(ADD_)
#undef ADD_
	c->phase.d2h_hidden_frac += r->d2h_hidden_frac;
	c->h2d_gbs += r->h2d_gbs;
	c->d2h_gbs += r->d2h_gbs;
	c->params_h2d_gbs += r->params_h2d_gbs;
	if (c->predicted || !r->profile[0])
		return;
	c->predicted = true;
	c->pred_iter_s = r->pred_iter_s;
	c->pred_apply_s = r->pred_apply_s;
#define PRED_(e, f, ...) c->pred.f = r->pred_##f;
	MB_PHASES(PRED_)
#undef PRED_
	c->pred.d2h_hidden_frac = r->pred_d2h_hidden_frac;
}

/* The sums of add_figures into means. */
static void figures(struct mb_cell *c)
{
	double w = c->nruns ? 1.0 / (double)c->nruns : NAN;

	c->iter_mean_s *= w;
	c->apply_mean_s *= w;
#define MEAN_(e, f, ...) c->phase.f *= w;
	MB_PHASES(MEAN_)
#undef MEAN_
	c->phase.d2h_hidden_frac *= w;
	c->h2d_gbs *= w;
	c->d2h_gbs *= w;
	c->params_h2d_gbs *= w;
}

/* ROW's figures and measured samples into *R. */
static int copy_run(struct mb_run *r, const struct mb_csv_row *row)
{
	size_t first = row->measure_first ? (size_t)row->measure_first : 1, s;

	memset(r, 0, sizeof(*r));
	r->run = (unsigned)row->run;
	r->iter_mean_s = row->iter_mean_s;
	r->apply_mean_s = row->apply_mean_s;
#define PHASE_(e, f, ...) r->phase[MB_PHASE_##e] = row->f;
	MB_PHASES(PHASE_)
#undef PHASE_
	snprintf(r->checksum, sizeof(r->checksum), "%s", row->checksum);
	for (s = first; s <= row->measure_last && s <= row->nsamples; s++)
		r->nsteps++;
	if (!r->nsteps)
		return 0;
	if (!(r->iter_s = malloc(2 * r->nsteps * sizeof(double))))
		return mb_fail("out of host memory gathering results");
	r->apply_s = r->iter_s + r->nsteps;
	memcpy(r->iter_s, row->iter_samples_s + first - 1, r->nsteps * sizeof(double));
	memcpy(r->apply_s, row->apply_samples_s + first - 1, r->nsteps * sizeof(double));
	return 0;
}

static int add_run(struct mb_cell *c, const struct mb_csv_row *row)
{
	int err;

	if (strcmp(row->status, "ok")) {
		if (!c->failed && !(c->failed = copy_row(row)))
			return mb_fail("out of host memory gathering results");
		return 0;
	}
	if (c->nruns == c->alloc) {
		size_t alloc = c->alloc ? 2 * c->alloc : 4;
		struct mb_run *runs = realloc(c->runs, alloc * sizeof(*runs));

		if (!runs)
			return mb_fail("out of host memory gathering results");
		c->runs = runs;
		c->alloc = alloc;
	}
	if ((err = copy_run(&c->runs[c->nruns], row)))
		return err;
	if (!c->nruns) {
		c->params_total = row->params_total;
		c->params_muon = row->params_muon;
		c->pinned_host_bytes = row->pinned_host_bytes;
		c->plan_peak_step_bytes = row->plan_peak_step_bytes;
		c->clblast_temp_bytes = row->clblast_temp_bytes;
	}
	c->nruns++;
	add_figures(c, row);
	return 0;
}

int mb_results_add(struct mb_table **tables, size_t *ntables, const struct mb_csv_row *row)
{
	struct mb_table *t = *tables, *grown;
	struct mb_cell *c;
	size_t k, nt = *ntables;

	for (k = nt; k > 0 && !comparable(t[k - 1].first, row); k--)
		; /* from the last: a file's rows come table by table */
	if (k) {
		k--;
	} else {
		if (nt == MB_RESULTS_TABLES_MAX)
			return mb_bad_input(
				"more than %d tables (rows of as many devices, hosts, "
				"bindings, models or knobs): too many to report together",
				MB_RESULTS_TABLES_MAX);
		grown = realloc(t, (nt + 1) * sizeof(*t));
		if (!grown)
			return mb_fail("out of host memory gathering results");
		*tables = t = grown;
		memset(&t[nt], 0, sizeof(t[nt]));
		if (!(t[nt].first = copy_row(row)))
			return mb_fail("out of host memory gathering results");
		k = (*ntables)++;
	}
	if (!(c = find_or_add(&t[k], row)))
		return mb_fail("out of host memory gathering results");
	return add_run(c, row);
}

void mb_results_finish(struct mb_table *tables, size_t ntables)
{
	size_t k, i;

	for (k = 0; k < ntables; k++) {
		qsort(tables[k].cells, tables[k].ncells, sizeof(*tables[k].cells), cmp_cell);
		for (i = 0; i < tables[k].ncells; i++)
			figures(&tables[k].cells[i]);
	}
}

int mb_results_gather(const struct mb_csv_row *rows, size_t n, struct mb_table **tables,
		      size_t *ntables)
{
	size_t i;
	int err = 0;

	*tables = NULL;
	*ntables = 0;
	for (i = 0; i < n && !err; i++)
		err = mb_results_add(tables, ntables, &rows[i]);
	if (err) {
		mb_results_release(*tables, *ntables);
		*tables = NULL;
		*ntables = 0;
		return err;
	}
	mb_results_finish(*tables, *ntables);
	return 0;
}

const struct mb_cell *mb_results_cell(const struct mb_table *t, unsigned stage, const char *variant)
{
	size_t i;

	for (i = 0; i < t->ncells; i++)
		if (t->cells[i].stage == stage && !strcmp(t->cells[i].variant, variant))
			return &t->cells[i];
	return NULL;
}

void mb_results_release(struct mb_table *tables, size_t ntables)
{
	size_t k, i, r;

	for (k = 0; k < ntables; k++) {
		for (i = 0; i < tables[k].ncells; i++) {
			for (r = 0; r < tables[k].cells[i].nruns; r++)
				free(tables[k].cells[i].runs[r].iter_s);
			free(tables[k].cells[i].runs);
			free((void *)tables[k].cells[i].failed);
		}
		free(tables[k].cells);
		free((void *)tables[k].first);
	}
	free(tables);
}

struct gathering {
	struct mb_table **tables;
	size_t *ntables, nrows;
};

static int add_row(const struct mb_csv_row *row, void *ctx)
{
	struct gathering *g = ctx;

	g->nrows++;
	return mb_results_add(g->tables, g->ntables, row);
}

/* No file twice (by any name): its runs would be pooled with themselves. */
static int given_once(char *const *files, int nfiles)
{
	struct stat a, b;
	int i, j;

	for (i = 0; i < nfiles; i++) {
		if (stat(files[i], &a))
			continue; /* the reader says why */
		for (j = 0; j < i; j++)
			if (!stat(files[j], &b) && a.st_dev == b.st_dev && a.st_ino == b.st_ino)
				return mb_bad_input(
					"'%s' is '%s' again: its runs would count twice", files[i],
					files[j]);
	}
	return 0;
}

int mb_results_read_files(char *const *files, int nfiles, struct mb_table **tables, size_t *ntables,
			  size_t *nrows)
{
	struct gathering g = { tables, ntables, 0 };
	size_t before;
	int i, err = 0;

	*tables = NULL;
	*ntables = 0;
	if ((err = given_once(files, nfiles)))
		return err;
	for (i = 0; i < nfiles && !err; i++) {
		before = g.nrows;
		err = mb_csv_read_each(files[i], add_row, &g);
		if (!err && g.nrows == before)
			fprintf(stderr, "muonbench: '%s' holds no runs; skipped\n", files[i]);
	}
	if (err) {
		mb_results_release(*tables, *ntables);
		*tables = NULL;
		*ntables = 0;
		return err;
	}
	mb_results_finish(*tables, *ntables);
	*nrows = g.nrows;
	return 0;
}

/*
 * tune --ns: our 16-bit GEMM kernel's tiles (kernels/ns_gemm.cl, mb_gemm16)
 * swept on the device over the GEMMs that Newton-Schulz issues for the
 * model's matrices; each tile checked against the portable kernel and a
 * float64 reference before it is timed, the fastest of each class of GEMM
 * size stored in the device's tuning (ns_gemm), where --tuning auto finds it.
 */
#include "tune_ns.h"

#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mb_clock.h"
#include "mb_err.h"
#include "mb_gemm16.h"
#include "mb_ns.h"
#include "mb_num.h"
#include "mb_tuning.h"
#include "print.h"
#include "setup.h"

#define SHAPES_MAX 4096 /* the model's Muon matrices, each (a 36-layer model: 252) */
#define GEMMS_MAX  8	/* distinct GEMMs of a class */
#define REPS	   3	/* timed runs of a GEMM, after one untimed */
#define SAMPLES	   12	/* rows and columns of C checked against float64 (edges among them) */
#define PREC	   MB_PREC_FP16 /* the Gram method's, which the defaults run on tensor cores */

/* Classes by C's elements: at most 2^18, 2^20, 2^22, 2^24, and the rest (0). */
static const uint64_t bounds[] = { 1ull << 18, 1ull << 20, 1ull << 22, 1ull << 24, 0 };
#define NCLASSES (sizeof(bounds) / sizeof(bounds[0]))

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

/* A GEMM Newton-Schulz issues, and how many of the model's matrices issue it. */
struct gemm {
	uint64_t m, n, k;
	bool bt;
	unsigned count;
};

struct klass {
	size_t ngemms;
	struct gemm gemm[GEMMS_MAX];
	double best_s, default_s; /* the weighted sum over its GEMMs; default_s the first tile's */
	size_t best;		  /* the index of the fastest tile */
};

struct sweep {
	const struct mb_cl *cl;
	struct mb_gemm16 ref; /* the portable kernel at its default: the check's reference */
	enum mb_gemm16_path path;
	unsigned flags;
	struct klass klass[NCLASSES];
	cl_mem buf;
	uint16_t *a, *b, *c; /* the host's A and op(B) (16-bit bits), and C read back */
	uint64_t a_elems, b_elems, c_elems;
};

/* The class whose bound holds a C of M x N elements. */
static size_t class_of(uint64_t m, uint64_t n)
{
	size_t i;

	for (i = 0; i + 1 < NCLASSES; i++)
		if (m <= bounds[i] / n)
			return i;
	return NCLASSES - 1;
}

/* Add the GEMM M x N x K (op(B) transposed: BT) to its class, once per shape. */
static int add_gemm(struct sweep *s, uint64_t m, uint64_t n, uint64_t k, bool bt)
{
	struct klass *c = &s->klass[class_of(m, n)];
	size_t i;

	for (i = 0; i < c->ngemms; i++)
		if (c->gemm[i].m == m && c->gemm[i].n == n && c->gemm[i].k == k &&
		    c->gemm[i].bt == bt) {
			c->gemm[i].count++;
			return 0;
		}
	if (c->ngemms == GEMMS_MAX)
		return mb_bad_input("tune --ns: more than %d distinct GEMMs in one size class; "
				    "give fewer shapes (--shape)",
				    GEMMS_MAX);
	c->gemm[c->ngemms++] = (struct gemm){ m, n, k, bt, 1 };
	if (m * k > s->a_elems)
		s->a_elems = m * k;
	if (k * n > s->b_elems)
		s->b_elems = k * n;
	if (m * n > s->c_elems)
		s->c_elems = m * n;
	return 0;
}

/*
 * The GEMMs of Newton-Schulz on an r x c matrix (m = min, n = max), as
 * mb_ns issues them by either method: X Xᵀ (m x m x n, op(B) transposed),
 * products of m x m matrices (m x m x m) and the update's B X (m x n x m).
 */
static int collect(struct sweep *s, const struct mb_shape *shapes, size_t n)
{
	size_t i;
	int err;

	for (i = 0; i < n; i++) {
		uint64_t m = shapes[i].rows < shapes[i].cols ? shapes[i].rows : shapes[i].cols;
		uint64_t c = shapes[i].rows ^ shapes[i].cols ^ m;

		if ((err = add_gemm(s, m, m, c, true)) || (err = add_gemm(s, m, m, m, false)) ||
		    (err = add_gemm(s, m, c, m, false)))
			return err;
	}
	return 0;
}

/* Random 16-bit values in [-1, 1) for A and B, on the host and in S's buffer. */
static int fill(struct sweep *s)
{
	uint64_t total = s->a_elems + s->b_elems + s->c_elems, i;
	uint32_t state = 2026;
	cl_int st;
	int err;

	s->a = malloc(s->a_elems * sizeof(uint16_t));
	s->b = malloc(s->b_elems * sizeof(uint16_t));
	s->c = malloc(s->c_elems * sizeof(uint16_t));
	if (!s->a || !s->b || !s->c)
		return mb_fail("tune --ns: out of host memory for %llu values",
			       (unsigned long long)total);
	for (i = 0; i < s->a_elems + s->b_elems; i++) {
		state = state * 1664525u + 1013904223u;
		(i < s->a_elems ? s->a : s->b)[i < s->a_elems ? i : i - s->a_elems] = mb_ns_bits16(
			(float)((double)(state >> 8) / (double)(1u << 24) * 2.0 - 1.0), PREC);
	}
	s->buf = clCreateBuffer(s->cl->context, CL_MEM_READ_WRITE, total * sizeof(uint16_t), NULL,
				&st);
	if ((err = mb_cl_check(s->cl, st, "clCreateBuffer", "tune --ns, %llu values",
			       (unsigned long long)total)))
		return err;
	st = clEnqueueWriteBuffer(s->cl->compute, s->buf, CL_TRUE, 0, s->a_elems * sizeof(uint16_t),
				  s->a, 0, NULL, NULL);
	if (st == CL_SUCCESS)
		st = clEnqueueWriteBuffer(s->cl->compute, s->buf, CL_TRUE,
					  s->a_elems * sizeof(uint16_t),
					  s->b_elems * sizeof(uint16_t), s->b, 0, NULL, NULL);
	return mb_cl_check(s->cl, st, "clEnqueueWriteBuffer", "tune --ns");
}

/* G on X once, C = A op(B) at the buffer's places; its device time into *SECONDS. */
static int run(struct sweep *s, const struct mb_gemm16 *g, const struct gemm *x, double *seconds)
{
	cl_event ev = NULL;
	cl_int st;
	int err;

	if ((err = mb_gemm16_enqueue(g, s->cl->compute, PREC, x->bt, x->m, x->n, x->k, 1.0f, s->buf,
				     0, s->buf, s->a_elems, 0.0f, s->buf, s->a_elems + s->b_elems,
				     s->a_elems + s->b_elems, &ev)))
		return err;
	st = clWaitForEvents(1, &ev);
	err = mb_cl_check(s->cl, st, "clWaitForEvents", "tune --ns");
	if (!err && seconds)
		err = mb_cl_event_interval(s->cl, ev, ev, "tune --ns's GEMM", seconds);
	clReleaseEvent(ev);
	return err;
}

/*
 * Whether C (read back after G ran X) matches a float64 product of the same
 * 16-bit inputs on SAMPLES rows by SAMPLES columns, the first and the last
 * among them: within a 16-bit rounding of the result and fp32 sums' error,
 * as tests/test_gemm16.c bounds it. WHY says where it did not.
 */
static int verified(struct sweep *s, const struct mb_gemm16 *g, const struct gemm *x, char *why,
		    size_t len, bool *ok)
{
	const double eps = 1.0 / 2048; /* fp16 */
	uint64_t r, c, l, i, j;
	cl_int st;
	int err;

	*ok = false;
	if ((err = run(s, g, x, NULL)))
		return err;
	st = clEnqueueReadBuffer(s->cl->compute, s->buf, CL_TRUE,
				 (s->a_elems + s->b_elems) * sizeof(uint16_t),
				 x->m * x->n * sizeof(uint16_t), s->c, 0, NULL, NULL);
	if ((err = mb_cl_check(s->cl, st, "clEnqueueReadBuffer", "tune --ns's check")))
		return err;
	for (i = 0; i < SAMPLES; i++)
		for (j = 0; j < SAMPLES; j++) {
			double sum = 0, mag = 0, got;

			r = i == SAMPLES - 1 ? x->m - 1 : x->m * i * 7919 / (SAMPLES * 7919 + 1);
			c = j == SAMPLES - 1 ? x->n - 1
					     : x->n * j * 104729 / (SAMPLES * 104729 + 3);
			for (l = 0; l < x->k; l++) {
				double av = mb_ns_value16(s->a[r * x->k + l], PREC);
				double bv = mb_ns_value16(
					x->bt ? s->b[c * x->k + l] : s->b[l * x->n + c], PREC);

				sum += av * bv;
				mag += fabs(av * bv);
			}
			got = mb_ns_value16(s->c[r * x->n + c], PREC);
			if (!(fabs(got - sum) <= eps * (fabs(sum) + mag / 8))) {
				snprintf(why, len,
					 "C[%llu][%llu] of %llux%llux%llu is %.6g, float64 "
					 "says %.6g",
					 (unsigned long long)r, (unsigned long long)c,
					 (unsigned long long)x->m, (unsigned long long)x->n,
					 (unsigned long long)x->k, got, sum);
				return 0;
			}
		}
	*ok = true;
	return 0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* The median of REPS runs of G on X (after one untimed), into *SECONDS. */
static int timed(struct sweep *s, const struct mb_gemm16 *g, const struct gemm *x, double *seconds)
{
	double t[REPS];
	size_t i;
	int err;

	if ((err = run(s, g, x, NULL)))
		return err;
	for (i = 0; i < REPS; i++)
		if ((err = run(s, g, x, &t[i])))
			return err;
	qsort(t, REPS, sizeof(t[0]), cmp_double);
	*seconds = t[REPS / 2];
	return 0;
}

/*
 * One row of the table: tile TEXT (what ptxas said of it: PTXAS) on class
 * CI took SECONDS, or CHECK says why not.
 */
static void row(const struct klass *c, size_t ci, const char *tile,
		const struct mb_gemm16_ptxas *ptxas, double seconds, const char *check, bool first)
{
	char cls[48], gemms[32], ms[32], rate[32], vs[32], regs[48];
	double flops = 0;
	size_t i;
	unsigned count = 0;

	for (i = 0; i < c->ngemms; i++) {
		flops += 2.0 * (double)c->gemm[i].m * (double)c->gemm[i].n * (double)c->gemm[i].k *
			 c->gemm[i].count;
		count += c->gemm[i].count;
	}
	if (bounds[ci])
		snprintf(cls, sizeof(cls), "C up to %llu", (unsigned long long)bounds[ci]);
	else
		snprintf(cls, sizeof(cls), "C past %llu", (unsigned long long)bounds[ci - 1]);
	snprintf(gemms, sizeof(gemms), "%zu (%u)", c->ngemms, count);
	snprintf(ms, sizeof(ms), seconds > 0 ? "%.3f" : "-", seconds * 1e3);
	snprintf(rate, sizeof(rate), seconds > 0 ? "%.1f" : "-", flops / seconds / 1e9);
	snprintf(vs, sizeof(vs), seconds > 0 && c->default_s > 0 ? "%.2f" : "-",
		 c->default_s / seconds);
	/* a stack frame: values in local memory (a loop left rolled, a helper not inlined,
	 * spills) */
	if (ptxas->stack_bytes)
		snprintf(regs, sizeof(regs), "%u (+%u B stack)", ptxas->registers,
			 ptxas->stack_bytes);
	else
		snprintf(regs, sizeof(regs), ptxas->registers ? "%u" : "-", ptxas->registers);
	struct mb_field f[] = { MB_FIELD_T("GEMMs by C's size", cls),
				MB_FIELD_TR("shapes (GEMMs)", gemms),
				MB_FIELD_T("tile", tile),
				MB_FIELD_TR("registers", regs),
				MB_FIELD_TR("time (ms)", ms),
				MB_FIELD_TR("GFLOP/s", rate),
				MB_FIELD_TR("speed-up on the default", vs),
				MB_FIELD_T("check", check) };

	mb_printer(MB_FORMAT_MD)->record(f, sizeof(f) / sizeof(f[0]), first);
}

/*
 * Tile TEXT (index TI) on every class: built, checked (against the portable
 * kernel, then float64 on each class's largest GEMM), timed; the class's
 * best kept. A tile that fails to build or check is reported and skipped;
 * a device lost is an error.
 */
static int try_tile(struct sweep *s, size_t ti, const char *text, double end_s, size_t *rows)
{
	struct mb_gemm16_classes one = { .n = 1 };
	struct mb_gemm16 g;
	char why[320] = "ok";
	size_t ci, i;
	bool ok = true;
	int err;

	if ((err = mb_gemm16_tile_parse(text, &one.tile[0])))
		return err;
	if (mb_gemm16_init(&g, s->cl, s->path, s->flags, &one)) {
		snprintf(why, sizeof(why), "failed to build: %.200s", mb_errmsg());
		ok = false;
	} else if (!mb_gemm16_matches(&g, &s->ref, why, sizeof(why))) {
		ok = false;
		if ((err = mb_cl_alive(s->cl))) /* a fault: nothing more to try */
			goto out;
	}
	for (ci = 0; ci < NCLASSES && !stop; ci++) {
		struct klass *c = &s->klass[ci];
		size_t big = 0;
		double sum = 0, t;

		if (!c->ngemms || (ti && mb_now_s() > end_s))
			continue;
		for (i = 1; i < c->ngemms; i++)
			if (c->gemm[i].m * c->gemm[i].n * c->gemm[i].k >
			    c->gemm[big].m * c->gemm[big].n * c->gemm[big].k)
				big = i;
		if (ok && (err = verified(s, &g, &c->gemm[big], why, sizeof(why), &ok)))
			goto out;
		for (i = 0; ok && i < c->ngemms; i++) {
			if ((err = timed(s, &g, &c->gemm[i], &t)))
				goto out;
			sum += t * c->gemm[i].count;
		}
		if (ok && !ti)
			c->default_s = sum;
		if (ok && (c->best_s <= 0 || sum < c->best_s)) {
			c->best_s = sum;
			c->best = ti;
		}
		row(c, ci, text, &g.ptxas[0], ok ? sum : 0, ok ? "ok" : why, !(*rows)++);
		if (!ok)
			break; /* said once */
	}
	err = 0;
out:
	if (err) {
		char first[512];

		/* (mb_cl_alive says its own error: the first one is the one to tell) */
		snprintf(first, sizeof(first), "%s", mb_errmsg());
		err = mb_fail("tune --ns, tile %s%s: %s", text,
			      mb_cl_alive(s->cl) ? " (the device was lost)" : "", first);
	}
	mb_gemm16_release(&g); /* (zeroed where its build failed) */
	return err;
}

/* The classes' best tiles as mb_gemm16_classes text, adjacent equal ones merged. */
static void stored_tiles(const struct sweep *s, const char *const *tiles, char *buf, size_t len)
{
	struct mb_gemm16_classes out = { 0 };
	size_t ci, prev = NCLASSES;

	for (ci = 0; ci < NCLASSES; ci++) {
		if (!s->klass[ci].ngemms || s->klass[ci].best_s <= 0)
			continue;
		if (prev < NCLASSES && s->klass[prev].best == s->klass[ci].best)
			out.n--; /* the same tile as the class below: one class up to this bound */
		mb_gemm16_tile_parse(tiles[s->klass[ci].best], &out.tile[out.n]);
		out.outputs[out.n++] = bounds[ci];
		prev = ci;
	}
	if (out.n)
		out.outputs[out.n - 1] = 0; /* the last holds every larger GEMM */
	mb_gemm16_classes_text(&out, buf, len);
}

/*
 * Store TILES (what was timed: AT) in the device's cached tuning, with the
 * CLBlast parameters that --tuning auto applies here now: the cached
 * file's, or a shipped one's made for this device or its architecture
 * (which the cached file would otherwise hide).
 */
static int store(const struct mb_cl *cl, const char *tiles, const char *at)
{
	enum mb_tuning_match match = MB_TUNING_NONE;
	struct mb_tuning t;
	char path[4096], source[4096] = "";
	time_t now = time(NULL);
	int err;

	mb_tuning_cache_path(&cl->info, path, sizeof(path));
	if (mb_tuning_load(path, &t) || !mb_tuning_matches(&t, &cl->info)) {
		if (mb_tuning_find(&cl->info, &t, source, sizeof(source), &match) <= 0 ||
		    match > MB_TUNING_ARCHITECTURE) {
			memset(&t, 0, sizeof(t));
			source[0] = '\0';
		}
		mb_tuning_set_key(&t, &cl->info);
	}
	snprintf(t.ns_gemm, sizeof(t.ns_gemm), "%s", tiles);
	strftime(t.ns_gemm_tuned_utc, sizeof(t.ns_gemm_tuned_utc), "%Y-%m-%dT%H:%M:%SZ",
		 gmtime(&now));
	snprintf(t.ns_gemm_at, sizeof(t.ns_gemm_at), "%s", at);
	if ((err = mb_tuning_save(path, &t)))
		return err;
	printf("\nStored in %s: ns_gemm %s. --tuning auto (the default) applies it on '%s'%s%s%s.\n",
	       path, tiles, cl->info.name, t.nkernels ? ", beside CLBlast's parameters " : "",
	       t.nkernels ? (source[0] ? "from " : "already there") : "", t.nkernels ? source : "");
	return 0;
}

/*
 * After tile FAILED (index FI of NTILES) ended the sweep with ERR, a device
 * lost or a call that failed: the best of the tiles before it stored, each
 * checked and timed on every class it reached before the failure. The
 * tile that failed is set aside on every class, those it passed too (the
 * caller restored the classes as they were before it): a tile under which
 * the device was lost is not one to run. Returns ERR, its message as it was
 * (", the tiles before it stored" or why not added).
 */
static int store_before(const struct sweep *s, const struct mb_cl *cl, const char *const *tiles,
			size_t fi, size_t ntiles, const char *at, int err)
{
	enum mb_err_kind kind = mb_err_kind();
	char msg[1024], text[256];

	snprintf(msg, sizeof(msg), "%s", mb_errmsg());
	stored_tiles(s, tiles, text, sizeof(text));
	if (!text[0]) {
		(void)mb_fail_kind(kind, "%s; nothing stored (no tile measured before it)", msg);
		return err;
	}
	if (store(cl, text, at)) {
		(void)mb_fail_kind(kind, "%s; the tiles before it could not be stored: %s", msg,
				   mb_errmsg());
		return err;
	}
	/* said once stored, not before: a store that fails says so instead */
	printf("\n(tile %s, %zu of %zu, failed: it is set aside, and the best of the %zu tiles "
	       "before it stored)\n",
	       tiles[fi], fi + 1, ntiles, fi);
	(void)mb_fail_kind(kind, "%s; the best of the %zu tiles before it stored", msg, fi);
	return err;
}

int mb_tune_ns(const struct mb_args *args)
{
	struct sweep *s = calloc(1, sizeof(*s));
	struct mb_shape *shapes = calloc(SHAPES_MAX, sizeof(*shapes));
	const char *const *tiles;
	struct mb_gemm16 chosen;
	struct klass kept[NCLASSES];
	struct mb_cl cl;
	uint64_t budget;
	char text[256], at[256];
	size_t nshapes = 0, ntiles, i, rows = 0, used = 0;
	double end_s;
	int err;

	if (!s || !shapes) {
		free(s);
		free(shapes);
		return mb_fail("out of host memory");
	}
	/* what is being tuned is the kernel itself: nothing that would set its tiles */
	unsetenv("MUONBENCH_NS_TILE");
	if ((err = mb_parse_duration("--time-budget", args->time_budget, &budget)) ||
	    (err = mb_setup_muon_shapes(args, shapes, SHAPES_MAX, &nshapes)) ||
	    (err = collect(s, shapes, nshapes))) {
		free(s);
		free(shapes);
		return err;
	}
	for (i = 0; i < nshapes && used < sizeof(at); i++) {
		size_t j;

		for (j = 0; j < i &&
			    (shapes[j].rows != shapes[i].rows || shapes[j].cols != shapes[i].cols);
		     j++)
			;
		if (j == i)
			used += (size_t)snprintf(at + used, sizeof(at) - used, "%s%llux%llu",
						 used ? "," : "fp16 on ",
						 (unsigned long long)shapes[i].rows,
						 (unsigned long long)shapes[i].cols);
	}
	free(shapes);
	if ((err = mb_setup_device(args, &cl))) {
		free(s);
		return err;
	}
	cl.ns_gemm[0] = '\0'; /* the path is chosen on the defaults, not a tuning's tiles */
	s->cl = &cl;
	if ((err = mb_gemm16_open(&chosen, &cl)))
		goto out;
	s->path = chosen.path;
	s->flags = chosen.flags;
	printf("# Newton-Schulz's GEMM kernel (kernels/ns_gemm.cl) tuned for '%s' (%s, driver "
	       "%s)\n\n",
	       cl.info.name, cl.info.platform_name, cl.info.driver);
	printf("Path: %s.\n", chosen.why);
	mb_gemm16_release(&chosen);
	tiles = mb_gemm16_tune_tiles(s->path, &ntiles);
	printf("The GEMMs that Newton-Schulz issues on %s (%s), by the size of C, each tile "
	       "checked against the portable kernel and a float64 product before it is timed "
	       "(the median of %d runs, device time, each shape weighted by the matrices that "
	       "issue it); %zu tiles, the default first, while --time-budget %llu s lasts.\n\n",
	       at + 8,
	       args->shapes   ? "--shape"
	       : args->config ? args->config
			      : args->model,
	       REPS, ntiles, (unsigned long long)budget);
	fflush(stdout);
	if ((err = mb_gemm16_init(&s->ref, &cl, MB_GEMM16_PORTABLE, 0, NULL)) || (err = fill(s)))
		goto out;
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	end_s = mb_now_s() + (double)budget;
	for (i = 0; i < ntiles && !stop; i++) {
		if (i && mb_now_s() > end_s) {
			printf("\n(--time-budget spent: %zu of %zu tiles tried)\n", i, ntiles);
			break;
		}
		memcpy(kept, s->klass, sizeof(kept));
		err = try_tile(s, i, tiles[i], end_s, &rows);
		fflush(stdout);
		if (err) {
			memcpy(s->klass, kept, sizeof(kept)); /* the classes before the tile */
			err = store_before(s, &cl, tiles, i, ntiles, at, err);
			goto out;
		}
	}
	if (stop) {
		err = mb_fail("interrupted: nothing stored");
		goto out;
	}
	stored_tiles(s, tiles, text, sizeof(text));
	if (!text[0]) {
		err = mb_fail("no tile passed its check, the default's included; nothing stored");
		goto out;
	}
	err = store(&cl, text, at);
out:
	mb_gemm16_release(&s->ref);
	if (s->buf)
		clReleaseMemObject(s->buf);
	free(s->a);
	free(s->b);
	free(s->c);
	free(s);
	mb_cl_release(&cl);
	return err;
}

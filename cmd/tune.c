/*
 * tune: CLBlast's own tuners, run for the device on the GEMMs that
 * Newton-Schulz issues, each within its share of the time budget; the best
 * parameters each one found, checked by `muonbench ns --verify` in a child
 * process, stored where --tuning auto finds them (mb_tuning).
 */
#define _DEFAULT_SOURCE /* mkdtemp */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "child.h"
#include "commands.h"
#include "mb_clock.h"
#include "mb_err.h"
#include "mb_ns.h"
#include "mb_num.h"
#include "mb_tuning.h"
#include "print.h"
#include "setup.h"
#include "tune_ns.h"

#define SHAPES_MAX 64
#define FOUND_MAX  64
#define TRIES_MAX  3	/* candidates of one kernel checked, best first */
#define DIM_MAX	   2048 /* a tuner's GEMM is cut to this: each configuration runs it */

/* One of CLBlast's tuner programs and its share of the budget. */
struct tuner {
	const char *program; /* clblast_tuner_xgemm */
	const char *what;    /* for people */
	int share;	     /* of 100 */
	int fractions[8];    /* -fraction of each pass, while time is left; 0 ends */
	int gemm;	     /* takes -m -n -k (else -m -n): 1 the largest GEMM, 2 the smallest */
};

static const struct tuner tuners[] = {
	{ "clblast_tuner_xgemm", "indirect GEMM", 30, { 4000, 1000, 250, 64, 16, 4, 1 }, 1 },
	{ "clblast_tuner_xgemm_direct", "direct GEMM", 15, { 1024, 256, 64, 16, 4, 1 }, 2 },
	{ "clblast_tuner_copy_fast", "copy", 5, { 8, 2, 1 }, 0 },
	{ "clblast_tuner_copy_pad", "pad", 5, { 8, 2, 1 }, 0 },
	{ "clblast_tuner_transpose_fast", "transpose", 5, { 8, 2, 1 }, 0 },
	{ "clblast_tuner_transpose_pad", "pad and transpose", 5, { 8, 2, 1 }, 0 },
	{ "clblast_tuner_routine_xgemm", "direct against indirect", 35, { 1 }, -1 },
};
#define NTUNERS (sizeof(tuners) / sizeof(tuners[0]))

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

struct best {
	struct mb_tuning_kernel k;
	double ms;
	char gemm[64], file[4600]; /* where it was read, for the routine tuner */
};

struct tune {
	const struct mb_args *args;
	struct mb_cl_device_info dev;
	uint64_t big[3], small[3]; /* m, n, k */
	char timed_shapes[256];	   /* ns --shape: what the routine setting is timed on */
	char dir[4096];
	struct best found[FOUND_MAX]; /* each tuner file's best, every pass */
	size_t nfound;
	double end_s;
};

static uint64_t round_dim(uint64_t d)
{
	d = (d + 127) / 128 * 128;
	return d > DIM_MAX ? DIM_MAX : d;
}

/*
 * Up to four of the N SHAPES, the distinct ones with the most Newton-Schulz
 * FLOPs (dimensions cut to DIM_MAX), as an ns --shape list.
 */
static void timed_shapes(struct tune *t, const struct mb_shape *shapes, size_t n)
{
	struct mb_shape pick[4];
	size_t npick = 0, i, j, low, used = 0;

	for (i = 0; i < n; i++) {
		struct mb_shape s = { shapes[i].rows < DIM_MAX ? shapes[i].rows : DIM_MAX,
				      shapes[i].cols < DIM_MAX ? shapes[i].cols : DIM_MAX };

		for (j = 0; j < npick && (pick[j].rows != s.rows || pick[j].cols != s.cols); j++)
			;
		if (j < npick)
			continue;
		if (npick < 4) {
			pick[npick++] = s;
			continue;
		}
		for (low = 0, j = 1; j < 4; j++) /* else replace the one with the fewest */
			if (mb_ns_flops(pick[j].rows, pick[j].cols, MB_NS_STANDARD) <
			    mb_ns_flops(pick[low].rows, pick[low].cols, MB_NS_STANDARD))
				low = j;
		if (mb_ns_flops(s.rows, s.cols, MB_NS_STANDARD) >
		    mb_ns_flops(pick[low].rows, pick[low].cols, MB_NS_STANDARD))
			pick[low] = s;
	}
	for (i = 0; i < npick && used < sizeof(t->timed_shapes); i++)
		used += (size_t)snprintf(t->timed_shapes + used, sizeof(t->timed_shapes) - used,
					 "%s%llux%llu", i ? "," : "",
					 (unsigned long long)pick[i].rows,
					 (unsigned long long)pick[i].cols);
}

/*
 * The GEMMs of Newton-Schulz on an m x n matrix (m <= n): X·Xᵀ is m x m x n,
 * A·A m x m x m and B·X m x n x m. The largest (by FLOPs over all the
 * matrices) and the smallest, rounded up to the tuners' multiple of 128.
 */
static int gemm_shapes(struct tune *t)
{
	struct mb_shape shapes[SHAPES_MAX];
	double flops, most = -1, least = INFINITY;
	size_t n = 0, i, g;
	int err;

	if ((err = mb_setup_muon_shapes(t->args, shapes, SHAPES_MAX, &n)))
		return err;
	timed_shapes(t, shapes, n);
	for (i = 0; i < n; i++) {
		uint64_t m = shapes[i].rows < shapes[i].cols ? shapes[i].rows : shapes[i].cols;
		uint64_t c = shapes[i].rows ^ shapes[i].cols ^ m;
		uint64_t mnk[3][3] = { { m, m, c }, { m, m, m }, { m, c, m } };

		for (g = 0; g < 3; g++) {
			flops = 2.0 * (double)mnk[g][0] * (double)mnk[g][1] * (double)mnk[g][2];
			if (flops > most) {
				most = flops;
				memcpy(t->big, mnk[g], sizeof(t->big));
			}
			if (flops < least) {
				least = flops;
				memcpy(t->small, mnk[g], sizeof(t->small));
			}
		}
	}
	for (g = 0; g < 3; g++) {
		t->big[g] = round_dim(t->big[g]);
		t->small[g] = round_dim(t->small[g]);
	}
	return 0;
}

/* Whether PROGRAM is on the PATH. */
static bool installed(const char *program)
{
	const char *path = getenv("PATH");
	char file[4096];
	size_t len;

	while (path && *path) {
		len = strcspn(path, ":");
		snprintf(file, sizeof(file), "%.*s/%s", (int)len, path, program);
		if (len && !access(file, X_OK))
			return true;
		path += len + (path[len] == ':');
	}
	return false;
}

/* Whether T already holds a candidate with B's kernel and parameters. */
static bool known(const struct tune *t, const struct best *b)
{
	size_t i;

	for (i = 0; i < t->nfound; i++)
		if (!strcmp(t->found[i].k.name, b->k.name) &&
		    t->found[i].k.nparams == b->k.nparams &&
		    !memcmp(t->found[i].k.value, b->k.value, b->k.nparams * sizeof(size_t)))
			return true;
	return false;
}

/*
 * Keep the best of each file the tuner wrote in DIR (one a phase); not the
 * links to other tuners' files that the routine tuner reads, nor repeats.
 */
static void collect(struct tune *t, const char *dir)
{
	struct dirent *e;
	struct stat st;
	DIR *d = opendir(dir);

	while (d && (e = readdir(d)) && t->nfound < FOUND_MAX) {
		struct best *b = &t->found[t->nfound];

		if (strncmp(e->d_name, "clblast_", 8) || !strstr(e->d_name, "_32.json"))
			continue;
		snprintf(b->file, sizeof(b->file), "%s/%s", dir, e->d_name);
		if (lstat(b->file, &st) || !S_ISREG(st.st_mode))
			continue;
		/* else gemm_routine_single_size and the like: nothing to apply */
		if (!mb_tuning_read_tuner(b->file, &b->k, &b->ms, b->gemm, sizeof(b->gemm)) &&
		    !known(t, b))
			t->nfound++;
	}
	if (d)
		closedir(d);
}

/* The fastest candidate for KERNEL not yet TRIED, or NULL. */
static struct best *best_of(struct tune *t, const char *kernel, const bool *tried)
{
	struct best *b = NULL;
	size_t i;

	for (i = 0; i < t->nfound; i++)
		if (!strcmp(t->found[i].k.name, kernel) && !(tried && tried[i]) &&
		    (!b || t->found[i].ms < b->ms))
			b = &t->found[i];
	return b;
}

/* The routine tuner reads the other tuners' files from its directory, by these names. */
static int stage_for_routine(struct tune *t, const char *dir)
{
	static const char *const files[][2] = {
		{ "Xgemm", "clblast_xgemm_1_32.json" },
		{ "XgemmDirect", "clblast_xgemm_direct_1_32.json" },
		{ "Copy", "clblast_copy_32.json" },
		{ "Pad", "clblast_pad_32.json" },
		{ "Transpose", "clblast_transpose_32.json" },
		{ "Padtranspose", "clblast_padtranspose_32.json" },
	};
	char to[4400];
	size_t i;
	const struct best *b;

	for (i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		if (!(b = best_of(t, files[i][0], NULL)))
			continue;
		snprintf(to, sizeof(to), "%s/%s", dir, files[i][1]);
		if (symlink(b->file, to))
			return mb_fail("cannot link '%s': %s", to, strerror(errno));
	}
	return 0;
}

static int run_tuner(struct tune *t, size_t which, int shares_left)
{
	const struct tuner *tu = &tuners[which];
	char dir[4200], plat[16], devn[16], frac[16], m[16], n[16], k[16];
	char *argv[24];
	double start = mb_now_s(), end = start + (t->end_s - start) * tu->share / shares_left;
	const uint64_t *mnk = tu->gemm == 2 ? t->small : t->big;
	int pass, rc, a;

	snprintf(plat, sizeof(plat), "%u", t->dev.platform);
	snprintf(devn, sizeof(devn), "%u", t->dev.device);
	snprintf(m, sizeof(m), "%llu", (unsigned long long)mnk[0]);
	snprintf(n, sizeof(n), "%llu", (unsigned long long)mnk[1]);
	snprintf(k, sizeof(k), "%llu", (unsigned long long)mnk[2]);
	if (mb_now_s() + 5 >= end)
		fprintf(stderr, "tune: %-24s skipped: its share of the budget is under 5 s\n",
			tu->what);
	for (pass = 0; pass < 8 && tu->fractions[pass] && !stop && mb_now_s() + 5 < end; pass++) {
		snprintf(dir, sizeof(dir), "%s/%s-%d", t->dir, tu->program + 14, pass);
		if (mkdir(dir, 0755))
			return mb_fail("cannot make '%s': %s", dir, strerror(errno));
		if (tu->gemm < 0 && stage_for_routine(t, dir))
			return -MB_EFAIL;
		snprintf(frac, sizeof(frac), "%d", tu->fractions[pass]);
		a = 0;
		argv[a++] = (char *)tu->program;
		argv[a++] = "-platform", argv[a++] = plat, argv[a++] = "-device", argv[a++] = devn;
		argv[a++] = "-precision", argv[a++] = "32";
		if (tu->gemm >= 0) {
			argv[a++] = "-m", argv[a++] = m, argv[a++] = "-n", argv[a++] = n;
			argv[a++] = "-fraction", argv[a++] = frac;
		}
		if (tu->gemm > 0)
			argv[a++] = "-k", argv[a++] = k;
		argv[a++] = "-runs", argv[a++] = tu->gemm < 0 ? "1" : "2";
		argv[a] = NULL;
		rc = mb_child_run(dir, argv, end, NULL, &stop);
		collect(t, dir);
		fprintf(stderr, "tune: %-24s pass %d (1/%s of the space): %.0f s in%s\n", tu->what,
			pass + 1, frac, mb_now_s() - start,
			rc == 124 ? ", stopped at its share of the budget"
			: rc == 0 ? ""
				  : ", failed (see its log.txt)");
		if (rc)
			break;
	}
	return 0;
}

/*
 * `ns --tuning C` in a child, in T's directory NAME (output there): with
 * VERIFY, a check against float64; else three timed reps on the timed
 * shapes. Its exit status, as mb_child_run gives it.
 */
static int run_ns(struct tune *t, const struct mb_tuning *c, const char *name, bool verify)
{
	char dir[4200];

	snprintf(dir, sizeof(dir), "%s/%s", t->dir, name);
	return mb_child_ns(dir, c, &t->dev, t->timed_shapes, verify,
			   mb_now_s() + (verify ? 600 : 1200), &stop);
}

/* Whether candidate C passes `ns --verify` (run in directory verify-NAME). */
static bool verified(struct tune *t, const struct mb_tuning *c, const char *name)
{
	char dir[96];

	snprintf(dir, sizeof(dir), "verify-%s", name);
	return run_ns(t, c, dir, true) == 0;
}

/*
 * The sum of column NAME over the rows of the CSV file PATH (a header line,
 * then rows of plain numbers and words); negative when it is missing.
 */
static double csv_sum(const char *path, const char *name)
{
	char line[4096], *tok, *save;
	int col = -1, i;
	double sum = 0;
	bool any = false;
	FILE *f = fopen(path, "r");

	if (!f)
		return -1;
	if (fgets(line, sizeof(line), f))
		for (i = 0, tok = strtok_r(line, ",\n", &save); tok;
		     i++, tok = strtok_r(NULL, ",\n", &save))
			if (!strcmp(tok, name))
				col = i;
	while (col >= 0 && fgets(line, sizeof(line), f)) {
		for (i = 0, tok = strtok_r(line, ",\n", &save); tok && i < col;
		     i++, tok = strtok_r(NULL, ",\n", &save))
			;
		if (tok) {
			sum += strtod(tok, NULL);
			any = true;
		}
	}
	fclose(f);
	return any ? sum : -1;
}

/*
 * Newton-Schulz's time on the timed shapes under tuning C, in a child `muonbench
 * ns --format csv` (run in directory NAME): the sum of the shapes' medians, in
 * seconds; negative when it failed.
 */
static double ns_seconds(struct tune *t, const struct mb_tuning *c, const char *name)
{
	char out[4400];
	double sum;

	snprintf(out, sizeof(out), "%s/%s/ns.csv", t->dir, name);
	if (run_ns(t, c, name, false))
		return -1;
	sum = csv_sum(out, "ns_median_s");
	return sum > 0 ? sum : -1;
}

/*
 * The routine tuner times square GEMMs; Newton-Schulz's are not. Keep its
 * setting only if Newton-Schulz on the model's shapes is faster with it
 * than with CLBlast's own switching point.
 */
static void check_routine(struct tune *t, struct mb_tuning *all)
{
	struct mb_tuning without = *all;
	double with_s, without_s;
	size_t i;

	for (i = 0; i < without.nkernels && strcmp(without.kernel[i].name, "GemmRoutine"); i++)
		;
	if (i == without.nkernels)
		return;
	without.kernel[i] = without.kernel[--without.nkernels];
	with_s = ns_seconds(t, all, "time-with-routine");
	without_s = ns_seconds(t, &without, "time-without-routine");
	printf("\nNewton-Schulz on %s: %.3f s with the routine tuner's switching point "
	       "(XGEMM_MIN_INDIRECT_SIZE=%zu), %.3f s with CLBlast's own: %s.\n",
	       t->timed_shapes, with_s, all->kernel[i].value[0], without_s,
	       with_s > 0 && (without_s < 0 || with_s <= without_s) ? "kept" : "dropped");
	if (!(with_s > 0 && (without_s < 0 || with_s <= without_s)))
		*all = without;
}

/* A tuning of one kernel, with the routine setting that makes GEMMs use it. */
static void candidate(const struct tune *t, const struct mb_tuning_kernel *k, struct mb_tuning *c)
{
	struct mb_tuning_kernel routine = { .name = "GemmRoutine", .nparams = 1 };

	memset(c, 0, sizeof(*c));
	mb_tuning_set_key(c, &t->dev);
	mb_tuning_put(c, k);
	snprintf(routine.param[0], sizeof(routine.param[0]), "XGEMM_MIN_INDIRECT_SIZE");
	routine.value[0] = strcmp(k->name, "XgemmDirect") ? 1 : 1u << 20;
	if (strcmp(k->name, "GemmRoutine"))
		mb_tuning_put(c, &routine);
}

static int check_and_store(struct tune *t)
{
	struct mb_tuning all = { 0 }, c;
	bool tried[FOUND_MAX] = { false };
	char path[4096];
	time_t now = time(NULL);
	size_t i, rows = 0;
	int err;

	mb_tuning_set_key(&all, &t->dev);
	strftime(all.tuned_utc, sizeof(all.tuned_utc), "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
	snprintf(all.gemm, sizeof(all.gemm), "%llux%llux%llu", (unsigned long long)t->big[0],
		 (unsigned long long)t->big[1], (unsigned long long)t->big[2]);
	for (i = 0; i < t->nfound && !stop; i++) {
		struct best *b = &t->found[i];
		bool ok = false;
		int tries;

		if (best_of(t, b->k.name, NULL) != b)
			continue; /* each kernel once, from its fastest candidate on */
		for (tries = 0; b && !ok && tries < TRIES_MAX && !stop; tries++) {
			char params[1024] = "", name[48], ms[32], check[128];
			size_t j, used = 0;

			candidate(t, &b->k, &c);
			snprintf(name, sizeof(name), "%s-%d", b->k.name, tries + 1);
			ok = strcmp(b->k.name, "GemmRoutine") ? verified(t, &c, name) : true;
			if (ok)
				mb_tuning_put(&all, &b->k);
			for (j = 0; j < b->k.nparams && used < sizeof(params); j++)
				used += (size_t)snprintf(params + used, sizeof(params) - used,
							 "%s%s=%zu", j ? " " : "", b->k.param[j],
							 b->k.value[j]);
			snprintf(ms, sizeof(ms), "%.3g ms", b->ms);
			snprintf(check, sizeof(check), "%s%s%s",
				 ok ? "ok" : "did not pass ns --verify, dropped (see verify-",
				 ok ? "" : name, ok ? "" : "/log.txt)");
			struct mb_field f[] = { MB_FIELD_T("kernel", b->k.name),
						MB_FIELD_T("tuned at", b->gemm),
						MB_FIELD_TR("tuner's time", ms),
						MB_FIELD_T("check", check),
						MB_FIELD_T("parameters", params) };

			mb_printer(MB_FORMAT_MD)->record(f, 5, !rows++);
			tried[b - t->found] = true;
			b = best_of(t, b->k.name, tried);
		}
	}
	if (stop)
		return mb_fail("interrupted: nothing stored");
	if (!t->nfound)
		return mb_fail(
			"the tuners finished nothing within --time-budget %s; nothing stored "
			"(give them more time)",
			t->args->time_budget);
	if (!all.nkernels)
		return mb_fail("no tuned kernel passed its check; nothing stored");
	check_routine(t, &all);
	if (!verified(t, &all, "all")) {
		/* the routine setting sends GEMMs down paths checked above; should all fail, say so
		 */
		return mb_fail("the tuned kernels together fail ns --verify (see '%s'); nothing "
			       "stored",
			       t->dir);
	}
	mb_tuning_cache_path(&t->dev, path, sizeof(path));
	if (!mb_tuning_load(path, &c) && mb_tuning_matches(&c, &t->dev)) { /* tune --ns's, kept */
		memcpy(all.ns_gemm, c.ns_gemm, sizeof(all.ns_gemm));
		memcpy(all.ns_gemm_tuned_utc, c.ns_gemm_tuned_utc, sizeof(all.ns_gemm_tuned_utc));
		memcpy(all.ns_gemm_at, c.ns_gemm_at, sizeof(all.ns_gemm_at));
	}
	if ((err = mb_tuning_save(path, &all)))
		return err;
	printf("\nStored in %s: --tuning auto (the default) applies it on '%s'.\n", path,
	       t->dev.name);
	return 0;
}

int mb_cmd_tune(const struct mb_args *args)
{
	struct tune *t = calloc(1, sizeof(*t));
	const char *tmp = getenv("TMPDIR");
	char real[PATH_MAX]; /* the tuners run elsewhere: their paths are absolute */
	struct mb_cl_select sel;
	struct mb_host host;
	uint64_t budget;
	size_t i;
	int err, shares = 0;

	if (args->tune_ns) {
		free(t);
		return mb_tune_ns(args);
	}
	if (!t)
		return mb_fail("out of host memory");
	t->args = args;
	for (i = 0; i < NTUNERS; i++)
		if (!installed(tuners[i].program)) {
			free(t);
			return mb_bad_input("%s is not installed: CLBlast's tuners come with "
					    "clblast-utils (Debian: apt-get install clblast-utils)",
					    tuners[i].program);
		}
	mb_setup_device_select(args, &sel);
	if ((err = mb_parse_duration("--time-budget", args->time_budget, &budget)) ||
	    (err = gemm_shapes(t)) || (err = mb_setup_binding(args, &host)) ||
	    (err = mb_cl_find(&sel, &t->dev))) {
		free(t);
		return err;
	}
	snprintf(t->dir, sizeof(t->dir), "%s/muonbench-tune-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(t->dir) || !realpath(t->dir, real) ||
	    snprintf(t->dir, sizeof(t->dir), "%s", real) >= (int)sizeof(t->dir)) {
		free(t);
		return mb_fail("cannot make a directory for the tuners in '%s': %s",
			       tmp && *tmp ? tmp : "/tmp", strerror(errno));
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	/* a closed terminal or ssh session: as SIGTERM, unless ignored (nohup) */
	if (signal(SIGHUP, on_signal) == SIG_IGN)
		signal(SIGHUP, SIG_IGN);
	printf("# CLBlast tuning for '%s' (%s, driver %s)\n\n", t->dev.name, t->dev.platform_name,
	       t->dev.driver);
	printf("Indirect GEMM tuned at %llux%llux%llu, direct at %llux%llux%llu (Newton-Schulz's "
	       "largest and smallest GEMMs, rounded up to multiples of 128, at most %d); budget "
	       "%llu s; the tuners' files are in %s.\n\n",
	       (unsigned long long)t->big[0], (unsigned long long)t->big[1],
	       (unsigned long long)t->big[2], (unsigned long long)t->small[0],
	       (unsigned long long)t->small[1], (unsigned long long)t->small[2], DIM_MAX,
	       (unsigned long long)budget, t->dir);
	fflush(stdout);
	t->end_s = mb_now_s() + (double)budget;
	for (i = 0; i < NTUNERS; i++)
		shares += tuners[i].share;
	for (i = 0; i < NTUNERS && !err && !stop; i++) {
		err = run_tuner(t, i, shares);
		shares -= tuners[i].share;
	}
	if (!err)
		err = check_and_store(t);
	free(t);
	return err;
}

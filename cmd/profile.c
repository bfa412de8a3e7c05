/*
 * profile: measure a device profile (mb_profile_measure) on the device that
 * --platform and --device select, print it, and keep it in the cache under
 * the device's key, beside its tuning (or in --out FILE), where
 * `predict --profile FILE` and run find it. --if-missing measures only
 * where there is none, or one of an older format (which run cannot read).
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "mb_err.h"
#include "mb_json.h"
#include "mb_ns.h"
#include "mb_num.h"
#include "mb_profile_measure.h"
#include "mb_tuning.h"
#include "setup.h"

#define COPY_BYTES	  (64ull << 20)
#define ELEMENTWISE_ELEMS MB_PROFILE_LARGE_ELEMS /* what the model reads the rates at */
/*
 * The rounds' bound, whatever the shapes, a --reps (the default 5: with the
 * copies before them, under a minute)
 */
#define ROUNDS_S_PER_REP 10

/* Shape I of a ladder: refused if a shape before it has its FLOPs by a method. */
static int distinct(const struct mb_shape *shape, size_t i)
{
	size_t j;
	int k;

	for (j = 0; j < i; j++)
		for (k = 0; k < MB_NS_NMETHODS; k++)
			if (mb_ns_flops(shape[i].rows, shape[i].cols, (enum mb_ns_method)k) ==
			    mb_ns_flops(shape[j].rows, shape[j].cols, (enum mb_ns_method)k))
				return mb_bad_input("--shape: %llux%llu and %llux%llu are the same "
						    "size (Newton-Schulz's ladder wants a rate a "
						    "size)",
						    (unsigned long long)shape[j].rows,
						    (unsigned long long)shape[j].cols,
						    (unsigned long long)shape[i].rows,
						    (unsigned long long)shape[i].cols);
	return 0;
}

/* --ns-precision for each method on the device INFO describes, into S. */
static int precisions(const struct mb_args *args, const struct mb_cl_device_info *info,
		      struct mb_profile_measure_settings *s)
{
	int k, err;

	for (k = 0; k < MB_NS_NMETHODS; k++)
		if ((err = mb_setup_precision(args, info, (enum mb_ns_method)k,
					      &s->ns_precision[k])))
			return err;
	return 0;
}

/* Whether P's ladders are at the precisions S asks for. */
static bool same_precisions(const struct mb_profile *p, const struct mb_profile_measure_settings *s)
{
	return !strcmp(p->ns_gram_precision, mb_precision_names[s->ns_precision[MB_NS_GRAM]]) &&
	       !strcmp(p->ns_standard_precision,
		       mb_precision_names[s->ns_precision[MB_NS_STANDARD]]);
}

/*
 * The cache's file for the device CL opened, into PATH: its directory made
 * and the file checked writable before the measuring, as --out is (bad
 * input, exit 2). With neither XDG_CACHE_HOME nor HOME set the cache is
 * ./.cache in the current directory (mb_tuning_cache_file): said.
 */
static int check_cache(const struct mb_cl *cl, char *path, size_t len)
{
	const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
	char why[512];
	int err;

	mb_profile_cache_path(&cl->info, path, len);
	if (!(xdg && *xdg) && !home)
		fprintf(stderr,
			"muonbench: neither XDG_CACHE_HOME nor HOME is set: the profile goes to "
			"the cache in the current directory, '%s'\n",
			path);
	if (mb_tuning_make_dirs(path)) {
		snprintf(why, sizeof(why), "%s", mb_errmsg());
		return mb_bad_input("%s: the profile's cache cannot take it (set XDG_CACHE_HOME, "
				    "or give --out FILE)",
				    why);
	}
	if ((err = mb_json_check_out(path)))
		mb_err_prefix("the profile's cache");
	return err;
}

int mb_cmd_profile(const struct mb_args *args)
{
	struct mb_profile_measure_report report;
	struct mb_profile_measure_settings s = { .copy_bytes = COPY_BYTES,
						 .elementwise_elems = ELEMENTWISE_ELEMS,
						 .reps = (unsigned)args->reps,
						 .seed = args->seed,
						 .rounds_budget_s =
							 ROUNDS_S_PER_REP * (double)args->reps,
						 .report = &report };
	uint64_t rows[MB_PROFILE_LADDER_MAX], cols[MB_PROFILE_LADDER_MAX];
	struct mb_shape shape[MB_PROFILE_LADDER_MAX];
	struct mb_profile p;
	struct mb_host host;
	struct mb_cl cl;
	char path[4096];
	size_t n, i;
	int err;

	if ((err = mb_parse_shapes("--shape",
				   args->shapes ? args->shapes : MB_PROFILE_DEFAULT_SHAPES, shape,
				   MB_PROFILE_LADDER_MAX, &n)))
		return err;
	for (i = 0; i < n; i++) {
		rows[i] = shape[i].rows;
		cols[i] = shape[i].cols;
		if ((err = distinct(shape, i)))
			return err;
	}
	s.ns_rows = rows;
	s.ns_cols = cols;
	s.ns_nshapes = n;
	if (args->if_missing) {
		struct mb_cl_device_info d;
		struct mb_cl_select sel;

		mb_setup_device_select(args, &sel);
		if ((err = mb_cl_find(&sel, &d)) || (err = precisions(args, &d, &s)))
			return err;
		if (args->out)
			snprintf(path, sizeof(path), "%s", args->out);
		else
			mb_profile_cache_path(&d, path, sizeof(path));
		if (!access(path, F_OK)) {
			if (!(err = mb_profile_load(&p, path)) && !same_precisions(&p, &s)) {
				fprintf(stderr,
					"muonbench: measuring again: the profile %s holds "
					"Newton-Schulz at %s (gram) and %s (standard), where %s and "
					"%s are asked\n",
					path, p.ns_gram_precision, p.ns_standard_precision,
					mb_precision_names[s.ns_precision[MB_NS_GRAM]],
					mb_precision_names[s.ns_precision[MB_NS_STANDARD]]);
			} else if (!err && p.lacks && !args->out) {
				/* the cache's, an older muonbench's of the same format: the
				 * model reads the key as its default, which predicts less well
				 * (an --out is the user's, who may have left keys out) */
				fprintf(stderr,
					"muonbench: measuring again: the profile %s has no \"%s\" "
					"(an older muonbench's), which this one measures\n",
					path, p.lacks);
			} else if (!err) {
				fprintf(stderr,
					"muonbench: the profile of '%s' is %s (remove it to "
					"measure again)\n",
					d.name, path);
				return 0;
			}
			/* an older muonbench's, which run cannot read, is measured anew, as is a
			 * damaged one in the cache (muonbench's own file; an --out is the user's)
			 */
			if (err && (err != -MB_EINPUT ||
				    (mb_err_kind() != MB_KIND_OLD_FORMAT && args->out)))
				return err;
			if (err)
				fprintf(stderr, "muonbench: measuring again: %s\n", mb_errmsg());
		}
	}
	/* past a file size limit a write fails (it is said, and the profile is on stdout) */
	signal(SIGXFSZ, SIG_IGN);
	/* an --out that cannot take the profile is refused before the minute of measuring */
	if ((args->out && (err = mb_json_check_out(args->out))) ||
	    (err = mb_setup_binding(args, &host)) || (err = mb_setup_device(args, &cl)))
		return err;
	if ((err = precisions(args, &cl.info, &s)) ||
	    (!args->out && (err = check_cache(&cl, path, sizeof(path))))) {
		mb_cl_release(&cl);
		return err;
	}
	err = mb_profile_measure(&cl, &s, &p);
	if (args->out)
		snprintf(path, sizeof(path), "%s", args->out);
	mb_cl_release(&cl);
	if (err)
		return err;
	mb_profile_write(stdout, &p);
	if ((err = mb_profile_save(path, &p))) {
		char why[512];

		/* still not written (a disk filled meanwhile): what was measured is on stdout */
		snprintf(why, sizeof(why), "%s", mb_errmsg());
		return mb_fail("%s; the profile measured is on standard output", why);
	}
	fprintf(stderr, "muonbench: measured in %.0f s, %.0f s of them the %u rounds",
		report.total_s, report.rounds_s, report.rounds);
	if (report.ncut)
		fprintf(stderr, " (held to about %.0f s: %zu figure%s timed in fewer: %s)",
			s.rounds_budget_s, report.ncut, report.ncut == 1 ? "" : "s", report.cut);
	fputc('\n', stderr);
	fprintf(stderr, "muonbench: profile of '%s' saved to %s (muonbench predict --profile %s)\n",
		p.name, path, path);
	return 0;
}

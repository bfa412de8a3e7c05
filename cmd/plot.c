/*
 * plot: a chart of a results table, drawn by gnuplot. The data and the
 * gnuplot script are written beside the image (IMAGE.dat, IMAGE.gp) so that
 * the chart can be edited and drawn again with `gnuplot IMAGE.gp`.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "commands.h"
#include "mb_err.h"
#include "mb_results.h"

/* "chart.svg" -> "chart" + SUFFIX into BUF. */
static void beside(char *buf, size_t len, const char *image, const char *suffix)
{
	const char *dot = strrchr(image, '.'), *slash = strrchr(image, '/');
	size_t n = dot && (!slash || dot > slash) ? (size_t)(dot - image) : strlen(image);

	snprintf(buf, len, "%.*s%s", (int)n, image, suffix);
}

/* Min and max of the runs' iteration or apply means of C. */
static void spread(const struct mb_cell *c, bool apply, double *lo, double *hi)
{
	size_t i;

	*lo = *hi = apply ? c->apply_mean_s : c->iter_mean_s;
	for (i = 0; i < c->nruns; i++) {
		double v = apply ? c->apply_runs_s[i] : c->iter_runs_s[i];

		*lo = v < *lo ? v : *lo;
		*hi = v > *hi ? v : *hi;
	}
}

static int write_data(const char *path, const struct mb_table *t)
{
	double lo, hi, alo, ahi;
	FILE *f = fopen(path, "w");
	size_t i;

	if (!f)
		return mb_bad_input("cannot write '%s': %s", path, strerror(errno));
	fprintf(f, "# cell iter iter_min iter_max apply apply_min apply_max h2d momentum ns "
		   "d2h_exposed\n");
	for (i = 0; i < t->ncells; i++) {
		const struct mb_cell *c = &t->cells[i];

		if (!c->nruns)
			continue;
		spread(c, false, &lo, &hi);
		spread(c, true, &alo, &ahi);
		fprintf(f, "\"ZeRO-%u %s\" %.6g %.6g %.6g %.6g %.6g %.6g %.6g %.6g %.6g %.6g\n",
			c->stage, c->variant, c->iter_mean_s, lo, hi, c->apply_mean_s, alo, ahi,
			c->phase.h2d_s, c->phase.momentum_s, c->phase.ns_s,
			c->phase.d2h_s * (1 - c->phase.d2h_hidden_frac));
	}
	if (fclose(f))
		return mb_bad_input("cannot write '%s': %s", path, strerror(errno));
	return 0;
}

/*
 * TEXT as a gnuplot single-quoted string: no backquote substitution or
 * escapes happen inside one; a quote is written twice.
 */
static void gp_string(FILE *f, const char *text)
{
	fputc('\'', f);
	for (; *text; text++) {
		if (*text == '\'')
			fputc('\'', f);
		if (*text != '\n' && *text != '\r')
			fputc(*text, f);
	}
	fputc('\'', f);
}

static int write_script(const char *path, const char *data, const char *image,
			const struct mb_table *t)
{
	/* one colour a quantity across both panels: iteration, apply, H2D, momentum, NS, D2H */
	static const char *const colours[] = { "#4c72b0", "#dd8452", "#55a868",
					       "#c44e52", "#8172b3", "#937860" };
	const char *ext = strrchr(image, '.');
	bool png = ext && !strcmp(ext, ".png");
	FILE *f = fopen(path, "w");
	char title[512];

	if (!f)
		return mb_bad_input("cannot write '%s': %s", path, strerror(errno));
	fprintf(f, "# muonbench plot: edit and draw again with gnuplot\n");
	fprintf(f, "set terminal %s size 1200,500\n", png ? "pngcairo" : "svg");
	fprintf(f, "set output ");
	gp_string(f, image);
	/* the title is text from a results file: it must not reach gnuplot's shell */
	snprintf(title, sizeof(title), "%s on '%s' (%s)", t->first->model, t->first->device,
		 t->first->driver);
	fprintf(f, "\nset multiplot layout 1,2 title ");
	gp_string(f, title);
	fprintf(f, "\n");
	fprintf(f, "set style fill solid 0.7 border -1\nset grid ytics\nset ylabel 'seconds'\n"
		   "set xtics rotate by -30 nomirror\nset key below\nset yrange [0:*]\n");
	fprintf(f, "set title 'Iteration and Muon apply (mean of runs; bars: min-max)'\n");
	fprintf(f, "set style data histograms\nset style histogram errorbars gap 2 lw 1\n");
	fprintf(f, "plot ");
	gp_string(f, data);
	fprintf(f, " using 2:3:4:xtic(1) title 'iteration' lc rgb '%s', '' using 5:6:7 title "
		   "'Muon apply' lc rgb '%s'\n",
		colours[0], colours[1]);
	fprintf(f, "set title 'Muon apply by phase (device time; writeback not hidden)'\n");
	fprintf(f, "set style histogram rowstacked\nset boxwidth 0.6\n");
	fprintf(f, "plot ");
	gp_string(f, data);
	fprintf(f, " using 8:xtic(1) title 'H2D' lc rgb '%s', '' using 9 title 'momentum' lc rgb "
		   "'%s', '' using 10 title 'Newton-Schulz' lc rgb '%s', '' using 11 title 'D2H' "
		   "lc rgb '%s'\n",
		colours[2], colours[3], colours[4], colours[5]);
	fprintf(f, "unset multiplot\n");
	if (fclose(f))
		return mb_bad_input("cannot write '%s': %s", path, strerror(errno));
	return 0;
}

/* Run gnuplot on SCRIPT; a missing gnuplot says which package brings it. */
static int gnuplot(const char *script)
{
	int status;
	pid_t pid;

	fflush(stdout);
	pid = fork();
	if (pid < 0)
		return mb_fail("cannot start gnuplot: %s", strerror(errno));
	if (!pid) {
		execlp("gnuplot", "gnuplot", script, (char *)NULL);
		_exit(errno == ENOENT ? 127 : 126);
	}
	if (waitpid(pid, &status, 0) < 0)
		return mb_fail("cannot wait for gnuplot: %s", strerror(errno));
	if (WIFEXITED(status) && WEXITSTATUS(status) == 127)
		return mb_bad_input("gnuplot is not installed (Debian: apt-get install "
				    "gnuplot-nox); the script is '%s'",
				    script);
	if (!WIFEXITED(status) || WEXITSTATUS(status))
		return mb_fail("gnuplot failed on '%s'", script);
	return 0;
}

static size_t ok_cells(const struct mb_table *t)
{
	size_t i, n = 0;

	for (i = 0; i < t->ncells; i++)
		n += t->cells[i].nruns > 0;
	return n;
}

int mb_cmd_plot(const struct mb_args *args)
{
	char data[4096], script[4096];
	struct mb_table *tables = NULL;
	size_t n = 0, nt = 0;
	const char *ext;
	int err = 0;

	if (!args->nfiles)
		return mb_bad_input("plot needs results files: muonbench plot FILE.csv... -o "
				    "chart.svg");
	if (!args->image)
		return mb_bad_input("plot needs -o IMAGE (a .svg or .png file to draw)");
	ext = strrchr(args->image, '.');
	if (!ext || (strcmp(ext, ".svg") && strcmp(ext, ".png")))
		return mb_bad_input("-o: the image must end in .svg or .png, got '%s'",
				    args->image);
	if ((err = mb_gather_files(args->files, args->nfiles, &tables, &nt, &n)))
		return err;
	if (!n)
		err = mb_bad_input("no rows to plot");
	if (!err && nt == 1 && !ok_cells(&tables[0]))
		err = mb_bad_input("no ok runs to plot: every run in these files failed");
	if (!err && nt > 1)
		err = mb_bad_input("these files hold %zu tables (different devices, hosts, models "
				   "or knobs; see muonbench report): plot one at a time",
				   nt);
	if (!err) {
		beside(data, sizeof(data), args->image, ".dat");
		beside(script, sizeof(script), args->image, ".gp");
		if (!(err = write_data(data, &tables[0])) &&
		    !(err = write_script(script, data, args->image, &tables[0])) &&
		    !(err = gnuplot(script)))
			printf("%s (data %s, script %s)\n", args->image, data, script);
	}
	mb_results_release(tables, nt);
	return err;
}

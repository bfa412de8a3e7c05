/*
 * plot: a chart of a results table, or of a `predict --format csv` sweep
 * (each cell's iteration and apply along the swept field), drawn by gnuplot.
 * The data and the gnuplot script are written beside the image (IMAGE.dat,
 * IMAGE.gp) so that the chart can be edited and drawn again with
 * `gnuplot IMAGE.gp`.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "commands.h"
#include "mb_err.h"
#include "mb_file.h"
#include "mb_phase.h"
#include "mb_results.h"

/* The apply's phases (mb_phase's table), each a part of the stacked bars. */
#define IN_APPLY_(e, f, name, clock, apply, ...) +(apply)
enum { NAPPLY = 0 MB_PHASES(IN_APPLY_) };
#undef IN_APPLY_

/* One colour a quantity across both panels: iteration, apply, then each apply phase. */
static const char *const colours[] = { "#4c72b0", "#dd8452", "#55a868", "#c44e52", "#8172b3",
				       "#937860", "#da8bc3", "#8c8c8c", "#ccb974", "#64b5cd" };
_Static_assert(sizeof(colours) / sizeof(colours[0]) >= 2 + NAPPLY,
	       "a colour for each phase of the apply");

/* C's mean of phase P: of the writeback, the part not hidden behind compute. */
static double phase_s(const struct mb_cell *c, enum mb_phase p)
{
#define SECS_(e, f, ...) c->phase.f,
	const double v[MB_NPHASES] = { MB_PHASES(SECS_) };
#undef SECS_

	return p == MB_PHASE_D2H ? v[p] * (1 - c->phase.d2h_hidden_frac) : v[p];
}

/* "chart.svg" -> "chart" + SUFFIX into BUF. */
static void beside(char *buf, size_t len, const char *image, const char *suffix)
{
	const char *dot = strrchr(image, '.'), *slash = strrchr(image, '/');
	size_t n = dot && (!slash || dot > slash) ? (size_t)(dot - image) : strlen(image);

	snprintf(buf, len, "%.*s%s", (int)n, image, suffix);
}

/*
 * The tables a chart draws: one, or under MPI (run's ranks) rank 0's with
 * its world's other ranks beside it, whose runs widen each bar's spread.
 */
struct chart {
	const struct mb_table *t; /* what the bars are: rank 0's, or the one table */
	const struct mb_table *ranks[MB_RESULTS_TABLES_MAX];
	size_t nranks; /* the tables whose runs make the spread, T's among them */
};

/* Min and max of the runs' iteration or apply means of C, over its cell in every rank's table. */
static void spread(const struct chart *ch, const struct mb_cell *c, bool apply, double *lo,
		   double *hi)
{
	size_t i, k, j;

	*lo = *hi = apply ? c->apply_mean_s : c->iter_mean_s;
	for (k = 0; k < ch->nranks; k++)
		for (j = 0; j < ch->ranks[k]->ncells; j++) {
			const struct mb_cell *o = &ch->ranks[k]->cells[j];

			if (o->stage != c->stage || strcmp(o->variant, c->variant))
				continue;
			for (i = 0; i < o->nruns; i++) {
				double v = apply ? o->runs[i].apply_mean_s : o->runs[i].iter_mean_s;

				*lo = v < *lo ? v : *lo;
				*hi = v > *hi ? v : *hi;
			}
		}
}

static int write_data(const char *path, const struct chart *ch)
{
	const struct mb_table *t = ch->t;
	double lo, hi, alo, ahi;
	FILE *f = fopen(path, "w");
	size_t i, p;

	if (!f)
		return mb_bad_input("cannot write '%s': %s", path, strerror(errno));
	fprintf(f, "# cell iter iter_min iter_max apply apply_min apply_max");
	for (p = 0; p < MB_NPHASES; p++)
		if (mb_phases[p].apply)
			fprintf(f, " %s%s", mb_phases[p].name, p == MB_PHASE_D2H ? "_exposed" : "");
	fprintf(f, "\n");
	for (i = 0; i < t->ncells; i++) {
		const struct mb_cell *c = &t->cells[i];

		if (!c->nruns)
			continue;
		spread(ch, c, false, &lo, &hi);
		spread(ch, c, true, &alo, &ahi);
		fprintf(f, "\"ZeRO-%u %s\" %.6g %.6g %.6g %.6g %.6g %.6g", c->stage, c->variant,
			c->iter_mean_s, lo, hi, c->apply_mean_s, alo, ahi);
		for (p = 0; p < MB_NPHASES; p++)
			if (mb_phases[p].apply)
				fprintf(f, " %.6g", phase_s(c, (enum mb_phase)p));
		fprintf(f, "\n");
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

/*
 * A plot script opened at PATH into *OUT, with its head: WHAT as its
 * comment, the terminal that IMAGE's extension asks for, the output, and two
 * panels titled TITLE (text from a results file: quoted, so that it cannot
 * reach gnuplot's shell).
 */
static int script_head(const char *path, const char *image, const char *what, const char *title,
		       FILE **out)
{
	const char *ext = strrchr(image, '.');
	bool png = ext && !strcmp(ext, ".png");
	FILE *f = fopen(path, "w");

	if (!(*out = f))
		return mb_bad_input("cannot write '%s': %s", path, strerror(errno));
	fprintf(f, "# muonbench %s: edit and draw again with gnuplot\n", what);
	fprintf(f, "set terminal %s size 1200,500\nset output ", png ? "pngcairo" : "svg");
	gp_string(f, image);
	fprintf(f, "\nset multiplot layout 1,2 title ");
	gp_string(f, title);
	fprintf(f, "\n");
	return 0;
}

static int write_script(const char *path, const char *data, const char *image,
			const struct chart *ch)
{
	const struct mb_table *t = ch->t;
	char title[512], ranks[96] = "";
	size_t p, k;
	FILE *f;
	int err;

	if (ch->nranks > 1)
		snprintf(ranks, sizeof(ranks),
			 ", rank 0 of %llu; bars: min-max over %zu ranks' runs",
			 (unsigned long long)t->first->world_size, ch->nranks);
	snprintf(title, sizeof(title), "%s on '%s' (%s)%s", t->first->model, t->first->device,
		 t->first->driver, ranks);
	if ((err = script_head(path, image, "plot", title, &f)))
		return err;
	fprintf(f, "set style fill solid 0.7 border -1\nset grid ytics\nset ylabel 'seconds'\n"
		   "set xtics rotate by -30 nomirror\nset key below\nset yrange [0:*]\n");
	fprintf(f, "set title 'Iteration and Muon apply (mean of runs; bars: min-max)'\n");
	fprintf(f, "set style data histograms\nset style histogram errorbars gap 2 lw 1\n");
	fprintf(f, "plot ");
	gp_string(f, data);
	fprintf(f,
		" using 2:3:4:xtic(1) title 'iteration' lc rgb '%s', '' using 5:6:7 title "
		"'Muon apply' lc rgb '%s'\n",
		colours[0], colours[1]);
	fprintf(f, "set title 'Muon apply by phase (device time; writeback not hidden)'\n");
	fprintf(f, "set style histogram rowstacked\nset boxwidth 0.6\n");
	fprintf(f, "plot ");
	/* the apply's phases from column 8 on, in the table's order */
	for (p = 0, k = 0; p < MB_NPHASES; p++) {
		if (!mb_phases[p].apply)
			continue;
		if (!k)
			gp_string(f, data);
		else
			fprintf(f, ", ''");
		fprintf(f, " using %zu%s title '%s%s' lc rgb '%s'", 8 + k, k ? "" : ":xtic(1)",
			mb_phases[p].name, p == MB_PHASE_D2H ? " (not hidden)" : "",
			colours[2 + k]);
		k++;
	}
	fprintf(f, "\n");
	fprintf(f, "unset multiplot\n");
	if (fclose(f))
		return mb_bad_input("cannot write '%s': %s", path, strerror(errno));
	return 0;
}

/*
 * Run gnuplot on SCRIPT; a missing gnuplot says which package brings it and
 * sets *MISSING (the script is kept, to draw later).
 */
static int gnuplot(const char *script, bool *missing)
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
	*missing = WIFEXITED(status) && WEXITSTATUS(status) == 127;
	if (*missing)
		return mb_bad_input("gnuplot is not installed (Debian: apt-get install "
				    "gnuplot-nox); the script is '%s'",
				    script);
	if (!WIFEXITED(status) || WEXITSTATUS(status))
		return mb_fail("gnuplot failed on '%s'", script);
	return 0;
}

/*
 * After a failure past writing DATA and SCRIPT (err, not a missing gnuplot),
 * remove them, and IMAGE unless it was there before (gnuplot may have begun
 * it): a failed plot leaves nothing of its own behind.
 */
static int clean_up(int err, bool wrote, bool missing, const char *image, bool image_existed,
		    const char *data, const char *script)
{
	if (!err || !wrote || missing)
		return err;
	unlink(data);
	unlink(script);
	if (!image_existed)
		unlink(image);
	return err;
}

/* ---- a predict sweep ---- */

/* predict --format csv's first columns: a file that starts so is a sweep. */
#define SWEEP_HEADER \
	"profile,model,sweep_option,sweep_value,stage,variant,iter_mean_s,apply_mean_s,"

enum { SW_PROFILE, SW_MODEL, SW_OPTION, SW_VALUE, SW_STAGE, SW_VARIANT, SW_ITER, SW_APPLY, SW_N };

/* Split LINE's first SW_N fields (quoted as mb_print_csv_text writes them) in place. */
static bool split(char *line, char **f)
{
	size_t n = 0;
	char *r = line, *w;

	while (n < SW_N) {
		f[n++] = w = r;
		if (*r == '"') {
			for (r++; *r && !(*r == '"' && r[1] != '"'); r++)
				*w++ = *r == '"' ? *++r : *r;
			if (*r++ != '"')
				return false;
		} else {
			while (*r && *r != ',' && *r != '\n')
				*w++ = *r++;
		}
		if (*r != ',' && n < SW_N)
			return false;
		*w = '\0';
		r++;
	}
	return true;
}

/*
 * A cell of the sweep, "ZeRO-2 both", and its points (value, iteration,
 * apply) in file order; where a value is not a number (on/off, or two knobs'
 * "4194304,1000000"), the points are placed by the order in which the values
 * first came, each labelled with its value.
 */
struct sweep_cell {
	char name[48];
	double pt[64][3];
	char label[64][64];
	size_t npts;
};

/* The distinct sweep values of a file, in the order they first came. */
struct sweep_values {
	char v[64][64];
	size_t n;
	bool numeric; /* every value is a number: placed by value */
	bool over;    /* more than 64 of them */
};

/* PATH's sweep into CELLS (at most MOST), the option and the model into OPTION and MODEL. */
static int read_sweep(const char *path, struct sweep_cell *cells, size_t most, size_t *ncells,
		      struct sweep_values *values, char *option, size_t olen, char *model,
		      size_t mlen)
{
	char line[4096], *f[SW_N], *end[3], name[48];
	size_t lineno = 1, k;
	FILE *in;
	int err;

	if ((err = mb_file_open_read(path, "predict sweep", &in)))
		return err;
	*ncells = 0;
	values->n = 0;
	values->numeric = true;
	values->over = false;
	option[0] = model[0] = '\0';
	if (!fgets(line, sizeof(line), in))
		err = mb_bad_input("%s: empty", path);
	while (!err && fgets(line, sizeof(line), in)) {
		struct sweep_cell *c;
		double v;

		lineno++;
		if (!split(line, f) || !*f[SW_OPTION] || !*f[SW_VALUE]) {
			err = mb_bad_input("%s:%zu: not a row of a predict sweep (no sweep_option "
					   "or sweep_value)",
					   path, lineno);
			break;
		}
		if (option[0] && strcmp(option, f[SW_OPTION])) {
			err = mb_bad_input(
				"%s:%zu: a second swept field ('%s' after '%s'): plot one "
				"sweep at a time",
				path, lineno, f[SW_OPTION], option);
			break;
		}
		snprintf(option, olen, "%s", f[SW_OPTION]);
		snprintf(model, mlen, "%s", f[SW_MODEL]);
		snprintf(name, sizeof(name), "ZeRO-%.4s %.32s", f[SW_STAGE], f[SW_VARIANT]);
		for (k = 0; k < *ncells && strcmp(cells[k].name, name); k++)
			;
		if (k == most || (k < *ncells && cells[k].npts == 64)) {
			err = mb_bad_input("%s:%zu: more than %zu cells or 64 values to plot", path,
					   lineno, most);
			break;
		}
		c = &cells[k];
		if (k == *ncells) {
			memset(c, 0, sizeof(*c));
			snprintf(c->name, sizeof(c->name), "%s", name);
			++*ncells;
		}
		v = strtod(f[SW_VALUE], &end[0]);
		c->pt[c->npts][1] = strtod(f[SW_ITER], &end[1]);
		c->pt[c->npts][2] = strtod(f[SW_APPLY], &end[2]);
		if (*end[1] || *end[2]) {
			err = mb_bad_input("%s:%zu: iter_mean_s and apply_mean_s must be numbers",
					   path, lineno);
			break;
		}
		values->numeric = values->numeric && !*end[0];
		/* the label as kept (64 bytes at most), which the places are found by */
		snprintf(c->label[c->npts], sizeof(c->label[0]), "%s", f[SW_VALUE]);
		for (k = 0; k < values->n && strcmp(values->v[k], c->label[c->npts]); k++)
			;
		if (k == values->n && k < 64)
			snprintf(values->v[values->n++], sizeof(values->v[0]), "%s",
				 c->label[c->npts]);
		else if (k == values->n)
			values->over = true;
		c->pt[c->npts++][0] = v;
	}
	if (!err && values->over && !values->numeric)
		err = mb_bad_input("%s: more than 64 values that are not numbers to plot", path);
	/* values that are not all numbers: each point at its value's place */
	for (k = 0; !err && !values->numeric && k < *ncells; k++) {
		size_t i, j;

		for (i = 0; i < cells[k].npts; i++) {
			for (j = 0; strcmp(values->v[j], cells[k].label[i]); j++)
				;
			cells[k].pt[i][0] = (double)j;
		}
	}
	if (!err && !*ncells)
		err = mb_bad_input("%s: no rows to plot", path);
	fclose(in);
	return err;
}

/* The cells into DATA: one gnuplot data block (index) a cell; each point's value labels it. */
static int write_sweep_data(const char *data, const struct sweep_cell *cells, size_t n)
{
	FILE *out = fopen(data, "w");
	const char *l;
	size_t i, k;

	if (!out)
		return mb_bad_input("cannot write '%s': %s", data, strerror(errno));
	for (i = 0; i < n; i++) {
		fprintf(out, "%s# %s\n", i ? "\n\n" : "", cells[i].name);
		for (k = 0; k < cells[i].npts; k++) {
			fprintf(out, "%.9g %.9g %.9g \"", cells[i].pt[k][0], cells[i].pt[k][1],
				cells[i].pt[k][2]);
			for (l = cells[i].label[k]; *l; l++)
				if (*l != '"' && *l != '\n' && *l != '\r')
					fputc(*l, out);
			fprintf(out, "\"\n");
		}
	}
	if (fclose(out))
		return mb_bad_input("cannot write '%s': %s", data, strerror(errno));
	return 0;
}

static int write_sweep_script(const char *path, const char *data, const char *image,
			      const struct sweep_cell *cells, size_t n, bool numeric,
			      const char *option, const char *model)
{
	static const char *const panels[][2] = { { "Iteration", "2" }, { "Muon apply", "3" } };
	char text[512];
	size_t i, p;
	FILE *f;
	int err;

	snprintf(text, sizeof(text), "%s, predicted along --%s", model, option);
	if ((err = script_head(path, image, "plot of a predict sweep", text, &f)))
		return err;
	fprintf(f, "set grid\nset key below\nset ylabel 'seconds'\nset yrange [0:*]\nset xlabel ");
	snprintf(text, sizeof(text), "--%s", option);
	gp_string(f, text);
	fprintf(f, "\n");
	if (!numeric) /* the values in their order, each a tic of its own */
		fprintf(f, "set offsets 0.25, 0.25, 0, 0\nset xtics rotate by -30\n");
	for (p = 0; p < 2; p++) {
		fprintf(f, "set title '%s (predicted)'\nplot ", panels[p][0]);
		for (i = 0; i < n; i++) {
			fprintf(f, "%s", i ? ", " : "");
			gp_string(f, data);
			fprintf(f, " index %zu using 1:%s%s with linespoints lw 2 pt 7 title ", i,
				panels[p][1], numeric ? "" : ":xtic(4)");
			gp_string(f, cells[i].name);
		}
		fprintf(f, "\n");
	}
	fprintf(f, "unset multiplot\n");
	if (fclose(f))
		return mb_bad_input("cannot write '%s': %s", path, strerror(errno));
	return 0;
}

/* Whether PATH starts with predict's CSV header (false for what is not a regular file). */
static bool is_sweep(const char *path)
{
	char line[sizeof(SWEEP_HEADER)];
	FILE *f;
	bool yes;

	if (mb_file_open_read(path, "results file", &f))
		return false;
	yes = fgets(line, sizeof(line), f) && !strcmp(line, SWEEP_HEADER);
	fclose(f);
	return yes;
}

/* Refuse to write the image or a side file that is one of the inputs (by any name). */
static int outputs_not_inputs(const struct mb_args *args, const char *data, const char *script)
{
	const char *out[] = { args->image, data, script };
	struct stat a, b;
	size_t i;
	int k;

	for (i = 0; i < 3; i++) {
		if (stat(out[i], &a))
			continue;
		for (k = 0; k < args->nfiles; k++)
			if (!stat(args->files[k], &b) && a.st_dev == b.st_dev &&
			    a.st_ino == b.st_ino)
				return mb_bad_input("-o %s would write '%s' over the input '%s': "
						    "give the image another name",
						    args->image, out[i], args->files[k]);
	}
	return 0;
}

static int plot_sweep(const struct mb_args *args)
{
	char data[4096], script[4096], option[64], model[128];
	struct sweep_values values;
	struct sweep_cell *cells;
	const size_t most = 64;
	bool wrote = false, missing = false, existed = !access(args->image, F_OK);
	size_t n = 0;
	int err;

	if (args->nfiles != 1)
		return mb_bad_input("a predict sweep is plotted alone: one file, not %d",
				    args->nfiles);
	cells = malloc(most * sizeof(*cells));
	if (!cells)
		return mb_fail("out of host memory for a sweep's %zu cells", most);
	beside(data, sizeof(data), args->image, ".dat");
	beside(script, sizeof(script), args->image, ".gp");
	if (!(err = outputs_not_inputs(args, data, script)) &&
	    !(err = read_sweep(args->files[0], cells, most, &n, &values, option, sizeof(option),
			       model, sizeof(model))) &&
	    (wrote = true) && !(err = write_sweep_data(data, cells, n)) &&
	    !(err = write_sweep_script(script, data, args->image, cells, n, values.numeric, option,
				       model)) &&
	    !(err = gnuplot(script, &missing)))
		printf("%s (data %s, script %s)\n", args->image, data, script);
	free(cells);
	return clean_up(err, wrote, missing, args->image, existed, data, script);
}

/*
 * The chart of the NT tables T into *CH: one table, or the ranks of one
 * invocation under MPI (rank 0's table and the others of its world, each
 * rank once); else none (false).
 */
static bool chart_of(const struct mb_table *t, size_t nt, struct chart *ch)
{
	size_t i, k;

	memset(ch, 0, sizeof(*ch));
	for (i = 0; i < nt && !ch->t; i++)
		if (!t[i].first->rank)
			ch->t = &t[i];
	if (nt == 1)
		ch->t = &t[0];
	if (!ch->t || (nt > 1 && ch->t->first->world_size < 2))
		return false;
	for (i = 0; i < nt; i++) {
		if (&t[i] != ch->t && !mb_results_other_rank(ch->t->first, t[i].first))
			return false;
		for (k = 0; k < ch->nranks; k++)
			if (ch->ranks[k]->first->rank == t[i].first->rank)
				return false;
		ch->ranks[ch->nranks++] = &t[i];
	}
	return true;
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
	struct chart *ch = NULL;
	struct mb_table *tables = NULL;
	size_t n = 0, nt = 0;
	bool wrote = false, missing = false, existed;
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
	if (is_sweep(args->files[0]))
		return plot_sweep(args);
	existed = !access(args->image, F_OK);
	if ((err = mb_results_read_files(args->files, args->nfiles, &tables, &nt, &n)))
		return err;
	if (!n)
		err = mb_bad_input("no rows to plot");
	if (!err && !(ch = malloc(sizeof(*ch))))
		err = mb_fail("out of host memory");
	/* under MPI, a table a rank: rank 0's bars, the spread over every rank's runs */
	if (!err && n && !chart_of(tables, nt, ch))
		err = mb_bad_input("these files hold %zu tables (different devices, hosts, models "
				   "or knobs; see muonbench report): plot one at a time",
				   nt);
	if (!err && !ok_cells(ch->t))
		err = mb_bad_input("no ok runs to plot: every run in these files failed");
	if (!err) {
		beside(data, sizeof(data), args->image, ".dat");
		beside(script, sizeof(script), args->image, ".gp");
		if (!(err = outputs_not_inputs(args, data, script)) && (wrote = true) &&
		    !(err = write_data(data, ch)) &&
		    !(err = write_script(script, data, args->image, ch)) &&
		    !(err = gnuplot(script, &missing)))
			printf("%s (data %s, script %s)\n", args->image, data, script);
		err = clean_up(err, wrote, missing, args->image, existed, data, script);
	}
	free(ch);
	mb_results_release(tables, nt);
	return err;
}

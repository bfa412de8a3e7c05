/*
 * The results file: rows written and read back unchanged (quoting included),
 * appends that keep one header, and every kind of bad file refused with the
 * line and what was expected.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "mb_csv.h"
#include "mb_err.h"
#include "mb_plan.h"
#include "mb_results.h"

static char path[64];

static int make_path(void **state)
{
	int fd;

	(void)state;
	snprintf(path, sizeof(path), "/tmp/muonbench-test-XXXXXX");
	fd = mkstemp(path);
	if (fd < 0)
		return -1;
	close(fd);
	return 0;
}

static int remove_path(void **state)
{
	(void)state;
	unlink(path);
	return 0;
}

static void sample_row(struct mb_csv_row *r, unsigned run)
{
	memset(r, 0, sizeof(*r));
	snprintf(r->status, sizeof(r->status), "failed");
	snprintf(r->reason, sizeof(r->reason), "batch 2 of 8 (\"a\", b),\nnext line");
	snprintf(r->device, sizeof(r->device), "GPU, the \"fast\" one");
	snprintf(r->model, sizeof(r->model), "tiny");
	snprintf(r->variant, sizeof(r->variant), "both");
	/* the words and forms the writer writes */
	snprintf(r->timestamp_utc, sizeof(r->timestamp_utc), "2026-12-01T13:30:20Z");
	snprintf(r->tuning_match, sizeof(r->tuning_match), "exact");
	snprintf(r->binding, sizeof(r->binding), "numa auto");
	snprintf(r->knob[MB_KNOB_PIN_MEMORY], sizeof(r->knob[0]), "on");
	snprintf(r->knob[MB_KNOB_WRITEBACK_DEP], sizeof(r->knob[0]), "event");
	snprintf(r->knob[MB_KNOB_PARAM_ORDER], sizeof(r->knob[0]), "shape");
	snprintf(r->knob[MB_KNOB_MOMENTUM_DTYPE], sizeof(r->knob[0]), "bf16");
	snprintf(r->knob[MB_KNOB_NS_METHOD], sizeof(r->knob[0]), "gram");
	snprintf(r->knob[MB_KNOB_PARAMS_BACK], sizeof(r->knob[0]), "pageable");
	snprintf(r->knob[MB_KNOB_ZERO3_APPLY], sizeof(r->knob[0]), "subgroup");
	snprintf(r->knob[MB_KNOB_FWD_BWD], sizeof(r->knob[0]), "off");
	snprintf(r->momentum_pinned, sizeof(r->momentum_pinned), "yes");
	snprintf(r->checksum, sizeof(r->checksum), "6f352a9718e7167e");
	snprintf(r->device_used_source, sizeof(r->device_used_source), "nvml");
	snprintf(r->pinned_alloc, sizeof(r->pinned_alloc), "nv");
	snprintf(r->pinned_device_copy, sizeof(r->pinned_device_copy), "yes");
	r->pinned_device_copy_bytes = 3200000000ull;
	snprintf(r->ns_precision, sizeof(r->ns_precision), "fp16");
	snprintf(r->ns_kernel, sizeof(r->ns_kernel), "ns_gemm-mma");
	r->ns_rate_gflops = MB_CSV_UNKNOWN;
	r->device_used_base_bytes = 123456789;
	r->device_used_peak_bytes = MB_CSV_UNKNOWN; /* written empty, read back as unknown */
	r->stage = 3;
	r->world_size = 1; /* a world of one rank (0 is refused) */
	r->run = run;
	r->runs = 2;
	r->steps = 3;
	r->measure_first = 2;
	r->measure_last = 3;
	r->params_total = 4022468096ull;
	r->iter_mean_s = 8.54;
	r->apply_mean_s = NAN;
	r->peak_step_bytes = UINT64_MAX;
	r->nsamples = 3;
	r->iter_samples_s[0] = 1.5;
	r->iter_samples_s[2] = 0.25;
	r->apply_samples_s[1] = 2;
	snprintf(r->profile, sizeof(r->profile), "profiles/reference.json");
	r->pred_iter_s = NAN;
	r->pred_apply_s = 2.25;
	/* a GPU's microsecond phases and a tiny copy's rate: kept to 6 significant digits */
	r->h2d_s = 3.78412e-6;
	r->apply_samples_s[2] = 4.77717e-4;
	r->h2d_gbs = 0.0249221;
}

static void write_text(const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void round_trip(void **state)
{
	struct mb_csv_row w, *rows = NULL;
	size_t n = 0;

	(void)state;
	unlink(path);
	sample_row(&w, 1);
	assert_int_equal(mb_csv_append(path, &w), 0);
	sample_row(&w, 2);
	assert_int_equal(mb_csv_append(path, &w), 0);
	assert_int_equal(mb_csv_check(path), 0);
	assert_int_equal(mb_csv_read(path, &rows, &n), 0);
	assert_int_equal(n, 2);
	assert_string_equal(rows[0].reason, w.reason);
	assert_string_equal(rows[0].device, w.device);
	assert_int_equal(rows[0].run, 1);
	assert_int_equal(rows[1].run, 2);
	assert_int_equal(rows[1].params_total, 4022468096ull);
	assert_string_equal(rows[1].profile, "profiles/reference.json");
	assert_true(isnan(rows[1].pred_iter_s));
	assert_true(rows[1].pred_apply_s == 2.25);
	assert_int_equal(rows[1].peak_step_bytes, UINT64_MAX);
	assert_true(rows[1].iter_mean_s == 8.54);
	assert_true(isnan(rows[1].apply_mean_s));
	assert_int_equal(rows[1].nsamples, 3);
	assert_true(rows[1].iter_samples_s[0] == 1.5 && rows[1].iter_samples_s[2] == 0.25);
	assert_true(rows[1].apply_samples_s[1] == 2);
	assert_true(rows[1].h2d_s == 3.78412e-6 && rows[1].h2d_gbs == 0.0249221);
	assert_true(rows[1].apply_samples_s[2] == 4.77717e-4);
	free(rows);
}

/* A good header followed by BODY, written to the file. */
static void with_header(const char *body)
{
	char *header = mb_csv_header();
	char *text = malloc(strlen(header) + strlen(body) + 1);

	strcpy(text, header);
	strcat(text, body);
	write_text(text);
	free(text);
	free(header);
}

static void assert_refused(const char *want)
{
	struct mb_csv_row *rows = NULL;
	size_t n = 0;

	if (mb_csv_read(path, &rows, &n) != -MB_EINPUT)
		fail_msg("accepted, want \"%s\"", want);
	if (!strstr(mb_errmsg(), want))
		fail_msg("got \"%s\", want \"%s\"", mb_errmsg(), want);
	assert_non_null(strstr(mb_errmsg(), path));
	free(rows);
}

/*
 * LINE (a header or a row without quoted fields) less the fields that format
 * 12 added (device_used_*, pinned_alloc, ns_precision, ns_kernel), in place: a
 * version 10 or 11 file.
 */
static void drop_device_used(const char *header, char *line)
{
	char names[4096], *name, *save = NULL, out[8000] = "", *field, *comma;
	bool keep[128];
	size_t k = 0;

	snprintf(names, sizeof(names), "%s", header);
	names[strcspn(names, "\n")] = '\0';
	for (name = strtok_r(names, ",", &save); name && k < 128; name = strtok_r(NULL, ",", &save))
		keep[k++] = strncmp(name, "device_used_", 12) && strcmp(name, "pinned_alloc") &&
			    strncmp(name, "pinned_device_copy", 18) &&
			    strncmp(name, "ns_precision", 12) && strncmp(name, "ns_kernel", 9) &&
			    strcmp(name, "ns_rate_gflops");
	line[strcspn(line, "\n")] = '\0';
	k = 0;
	/* field by field, the empty ones too (which strtok would skip) */
	for (field = line; field && k < 128; field = comma ? comma + 1 : NULL, k++) {
		if ((comma = strchr(field, ',')))
			*comma = '\0';
		if (keep[k])
			snprintf(out + strlen(out), sizeof(out) - strlen(out), "%s%s",
				 k && strlen(out) ? "," : "", field);
	}
	k = strlen(out); /* under 8000: the line's 8192 bytes hold it and the newline */
	memcpy(line, out, k);
	memcpy(line + k, "\n", 2);
}

/* A file of version 11 has no device_used_* columns: read as unknown; a row of 12 needs them. */
static void older_columns(void **state)
{
	char *header = mb_csv_header(), *row, h[8192], r[8192], text[16384];
	struct mb_csv_row w, *rows = NULL;
	size_t n = 0;

	(void)state;
	sample_row(&w, 1);
	snprintf(w.reason, sizeof(w.reason), "plain");
	snprintf(w.device, sizeof(w.device), "plain");
	w.device_used_peak_bytes = 5;
	row = mb_csv_format(&w);
	snprintf(h, sizeof(h), "%s", header);
	snprintf(r, sizeof(r), "%s", row);
	drop_device_used(header, h);
	drop_device_used(header, r);
	assert_null(strstr(h, "device_used"));
	assert_null(strstr(h, "pinned_alloc"));
	r[1] = '1'; /* "11," */
	snprintf(text, sizeof(text), "%s%s", h, r);
	write_text(text);
	assert_int_equal(mb_csv_read(path, &rows, &n), 0);
	assert_true(n == 1 && !rows[0].device_used_source[0] &&
		    rows[0].device_used_base_bytes == MB_CSV_UNKNOWN &&
		    rows[0].device_used_peak_bytes == MB_CSV_UNKNOWN && !rows[0].pinned_alloc[0] &&
		    !strcmp(mb_results_pinned_alloc_setting(&rows[0]), "alloc-host-ptr") &&
		    !strcmp(mb_results_ns_precision_setting(&rows[0]), "fp32") &&
		    rows[0].ns_rate_gflops == MB_CSV_UNKNOWN &&
		    rows[0].pinned_device_copy_bytes == MB_CSV_UNKNOWN &&
		    !rows[0].pinned_device_copy[0] && !strcmp(rows[0].checksum, w.checksum));
	free(rows);
	r[1] = '2'; /* a row of 12 that lacks them */
	snprintf(text, sizeof(text), "%s%s", h, r);
	write_text(text);
	assert_refused(":2: missing column 'pinned_alloc' (format_version 12 has it)");
	free(row);
	free(header);
}

static void bad_files(void **state)
{
	struct mb_csv_row w, *rows = NULL;
	size_t n = 0;
	char *line;

	(void)state;
	/* a bandwidth calibration beside the results: read, and no runs in it */
	write_text("bandwidth_format_version,size_bytes\n1,4096\n");
	assert_int_equal(mb_csv_read(path, &rows, &n), 0);
	assert_true(n == 0 && rows == NULL);
	write_text("name,value\n1,2\n");
	assert_refused(":1: not a muonbench results file (no format_version column)");
	write_text("");
	assert_refused(":1: not a muonbench results file (no header line)");
	write_text("format_version,status\n1,ok\n");
	assert_refused(":1: missing column 'reason'");
	with_header("1,ok,,2026\n");
	assert_refused(
		":2: expected 103 fields as in the header, found 4 (a truncated or edited row?)");
	sample_row(&w, 1);
	snprintf(w.variant, sizeof(w.variant), "pipeline"); /* format 10 held it too, later */
	line = mb_csv_format(&w);
	assert_memory_equal(line, "13,", 3); /* what is written */
	line[1] = '9';			     /* an older format_version in its place */
	with_header(line + 1);
	assert_refused(":2: format_version '9': this muonbench reads versions 10 to 13");
	line[1] = '4'; /* a newer one: what it holds is not known here */
	with_header(line);
	assert_refused(":2: format_version '14': this muonbench reads versions 10 to 13");
	line[1] = '0'; /* 10: the same columns, read as they are */
	with_header(line);
	assert_int_equal(mb_csv_read(path, &rows, &n), 0);
	assert_true(n == 1 && rows[0].run == w.run && !strcmp(rows[0].variant, w.variant) &&
		    !strcmp(rows[0].checksum, w.checksum));
	free(rows);
	rows = NULL;
	n = 0;
	line[1] = '1';
	line[0] = '0'; /* "01": not as the writer writes 1 */
	with_header(line);
	assert_refused(":2: format_version '01'");
	free(line);
	snprintf(w.variant, sizeof(w.variant), "both"); /* the sample's, which the rest edit */
	/* a truncated quoted field: the file ends inside the reason */
	line = mb_csv_format(&w);
	line[strcspn(line, "\n")] = '\0';
	with_header(line);
	assert_refused(":2: a quoted field that never ends");
	free(line);
	w.stage = 2;
	line = mb_csv_format(&w);
	{
		char *at = strstr(line, ",2,both,"), *edited = malloc(strlen(line) + 8);

		sprintf(edited, "%.*s,two,both,%s", (int)(at - line), line, at + 8);
		with_header(edited);
		free(edited);
	}
	assert_refused("column 'stage': expected a whole number, found 'two'");
	free(line);
	/* what a reader indexes by is checked: stage, variant, the measured steps */
	w.stage = 4;
	line = mb_csv_format(&w);
	with_header(line);
	assert_refused(":2: column 'stage': expected 1, 2 or 3, found 4");
	free(line);
	w.stage = 2;
	w.measure_first = 0;
	line = mb_csv_format(&w);
	with_header(line);
	assert_refused(":2: columns 'steps', 'measure_first', 'measure_last': expected");
	free(line);
	w.measure_first = 2;
	/* NaN and infinity are not numbers the writer writes */
	w.iter_samples_s[1] = INFINITY;
	line = mb_csv_format(&w);
	with_header(line);
	assert_refused("column 'iter_samples_s': expected seconds (finite numbers >= 0)");
	free(line);
	w.iter_samples_s[1] = 0;
	/* a file cut inside its last field */
	line = mb_csv_format(&w);
	line[strlen(line) - 3] = '\0';
	with_header(line);
	assert_refused(":2: the last row has no newline (a truncated file?)");
	free(line);
	/* a column twice */
	write_text("format_version,stage,stage\n");
	assert_refused(":1: column 'stage' twice in the header");
	assert_int_equal(mb_csv_read("/nonexistent/results.csv", &(struct mb_csv_row *){ NULL },
				     &(size_t){ 0 }),
			 -MB_EINPUT);
}

/*
 * A good row (no quotes in it) with the field of COLUMN set to VALUE, after
 * a header, into the file.
 */
static void with_field(const char *column, const char *value)
{
	char *header = mb_csv_header(), *line, *out, *h, *f, *hend, *fend;
	struct mb_csv_row w;

	sample_row(&w, 1);
	snprintf(w.reason, sizeof(w.reason), "none");
	snprintf(w.device, sizeof(w.device), "GPU");
	line = mb_csv_format(&w);
	out = calloc(1, strlen(line) + strlen(value) + 1);
	assert_non_null(out);
	/* the header's names and the row's fields side by side, empty ones included */
	for (h = header, f = line;; h = hend + 1, f = fend + 1) {
		hend = h + strcspn(h, ",\n");
		fend = f + strcspn(f, ",\n");
		if (strncmp(h, column, (size_t)(hend - h)) || column[hend - h])
			strncat(out, f, (size_t)(fend - f));
		else
			strcat(out, value);
		strcat(out, *hend == ',' ? "," : "\n");
		if (*hend != ',')
			break;
	}
	with_header(out);
	free(out);
	free(line);
	free(header);
}

/* Hand-edited fields: each refused with the line and the column, by the column's type and range. */
static void edited_fields(void **state)
{
	static const struct {
		const char *column, *value, *want;
	} cases[] = {
		{ "iter_mean_s", "-5", ":2: column 'iter_mean_s': expected seconds" },
		{ "apply_mean_s", "0x10", ":2: column 'apply_mean_s': expected seconds" },
		{ "h2d_gbs", "-1", ":2: column 'h2d_gbs': expected GB/s" },
		{ "d2h_hidden_frac", "1.5", ":2: column 'd2h_hidden_frac': expected a fraction" },
		{ "status", "", ":2: column 'status': expected ok|failed|interrupted, found ''" },
		{ "status", "OK",
		  ":2: column 'status': expected ok|failed|interrupted, found 'OK'" },
		{ "checksum", "zzzz", ":2: column 'checksum': expected 16 hex digits" },
		{ "checksum", "6F352A9718E7167E", ":2: column 'checksum': expected 16 hex digits" },
		{ "timestamp_utc", "yesterday", ":2: column 'timestamp_utc': expected a UTC time" },
		{ "pin_memory", "yes", ":2: column 'pin_memory': expected on|off, found 'yes'" },
		{ "variant", "fast", ":2: column 'variant': expected master|pin|overlap|both" },
		{ "momentum_dtype", "fp16", ":2: column 'momentum_dtype': expected fp32|bf16" },
		{ "iter_samples_s", "1;-2;3", ":2: column 'iter_samples_s': expected seconds" },
		{ "run", "3",
		  ":2: columns 'run', 'runs': expected 1 <= run <= runs, found 3 of 2" },
		{ "layers", "-1", ":2: column 'layers': expected a whole number, found '-1'" },
	};
	struct mb_csv_row *rows = NULL;
	size_t i, n = 0;

	(void)state;
	with_field("iter_mean_s", "5"); /* the row itself is good */
	assert_int_equal(mb_csv_read(path, &rows, &n), 0);
	assert_int_equal(n, 1);
	assert_true(rows[0].iter_mean_s == 5);
	free(rows);
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		with_field(cases[i].column, cases[i].value);
		assert_refused(cases[i].want);
	}
}

/* Two results files joined into one (cat a.csv b.csv): the second header is named. */
static void joined_files(void **state)
{
	struct mb_csv_row w;
	char *header = mb_csv_header(), *line, *text;

	(void)state;
	sample_row(&w, 1);
	line = mb_csv_format(&w); /* its reason spans two lines */
	text = malloc(2 * (strlen(header) + strlen(line)) + 1);
	assert_non_null(text);
	sprintf(text, "%s%s%s%s", header, line, header, line);
	write_text(text);
	assert_refused(":4: a second header at line 4 (two files joined into one?)");
	/* a bandwidth calibration joined after results */
	sprintf(text, "%s%sbandwidth_format_version,size_bytes\n1,4096\n", header, line);
	write_text(text);
	assert_refused(":4: a second header at line 4");
	free(text);
	free(line);
	free(header);
}

/* Rows one at a time: the callback sees each in order, and its error stops the reading. */
static int count_rows(const struct mb_csv_row *row, void *ctx)
{
	unsigned *n = ctx;

	if (row->run != ++*n)
		return mb_bad_input("row %u out of order", *n);
	return *n == 3 ? mb_bad_input("stopped at the third") : 0;
}

static void each_row(void **state)
{
	struct mb_csv_row w;
	unsigned i, n = 0;

	(void)state;
	unlink(path);
	for (i = 1; i <= 4; i++) {
		sample_row(&w, i);
		w.runs = 4;
		assert_int_equal(mb_csv_append(path, &w), 0);
	}
	assert_int_equal(mb_csv_read_each(path, count_rows, &n), -MB_EINPUT);
	assert_string_equal(mb_errmsg(), "stopped at the third");
	assert_int_equal(n, 3);
}

/*
 * Rows added one at a time from one buffer, as report reads them: the tables
 * keep what they use (copies, each run's means and measured samples), not the rows.
 */
static void gathered_by_copy(void **state)
{
	struct mb_table *tables = NULL;
	const struct mb_cell *c;
	struct mb_csv_row row;
	size_t nt = 0;
	unsigned i;

	(void)state;
	for (i = 1; i <= 3; i++) {
		sample_row(&row, i);
		row.runs = 3;
		snprintf(row.status, sizeof(row.status), "%s", i == 2 ? "interrupted" : "ok");
		snprintf(row.reason, sizeof(row.reason), "run %u", i);
		row.iter_mean_s = i;
		row.apply_mean_s = 10 * i;
		row.peak_device_bytes = 100 * i;
		row.run = i;
		row.nsamples = 4;
		row.measure_first = 2;
		row.measure_last = 3;
		row.apply_samples_s[1] = 100 * i;
		row.apply_samples_s[2] = 100 * i + 1;
		assert_int_equal(mb_results_add(&tables, &nt, &row), 0);
		memset(&row, 0xa5, sizeof(row)); /* the reader's buffer, reused */
	}
	mb_results_finish(tables, nt);
	assert_int_equal(nt, 1);
	assert_string_equal(tables[0].first->reason, "run 1");
	c = mb_results_cell(&tables[0], 3, "both");
	assert_non_null(c);
	assert_int_equal(c->nruns, 2);
	assert_true(c->runs[0].iter_mean_s == 1 && c->runs[1].iter_mean_s == 3);
	assert_true(c->runs[0].apply_mean_s == 10 && c->runs[1].apply_mean_s == 30);
	assert_int_equal(c->runs[1].run, 3);
	/* the measured steps' samples only, copied */
	assert_int_equal(c->runs[1].nsteps, 2);
	assert_true(c->runs[1].apply_s[0] == 300 && c->runs[1].apply_s[1] == 301);
	assert_true(c->iter_mean_s == 2 && c->apply_mean_s == 20);
	assert_int_equal(c->peak_bytes, 300);
	assert_string_equal(c->failed->status, "interrupted");
	assert_string_equal(c->failed->reason, "run 2");
	mb_results_release(tables, nt);
}

/*
 * A knob with AUTO (mb_knob.h): "auto" is each stage's word; compare reads
 * a stage's own word as "auto" (a default grid's ZeRO-2 fp32 and ZeRO-3
 * bf16 rows match), an explicit other one not; report's header says what
 * auto means.
 */
static void knob_auto(void **state)
{
	struct mb_csv_row a, b;
	char buf[128];

	(void)state;
	assert_int_equal(mb_knob_word_at(MB_KNOB_MOMENTUM_DTYPE, "auto", 2), MB_MOM_FP32);
	assert_int_equal(mb_knob_word_at(MB_KNOB_MOMENTUM_DTYPE, "auto", 3), MB_MOM_BF16);
	assert_int_equal(mb_knob_word_at(MB_KNOB_PARAMS_BACK, "auto", 1), MB_BACK_PINNED);
	assert_int_equal(mb_knob_word_at(MB_KNOB_PARAMS_BACK, "auto", 3), MB_BACK_PAGEABLE);
	assert_int_equal(mb_knob_word_at(MB_KNOB_PARAMS_BACK, "pinned", 3), MB_BACK_PINNED);
	/* no auto for a knob without it, nor for a stage out of range */
	assert_int_equal(mb_knob_word_at(MB_KNOB_ZERO3_APPLY, "auto", 3), -1);
	assert_int_equal(mb_knob_word_at(MB_KNOB_MOMENTUM_DTYPE, "auto", 4), -1);
	assert_string_equal(mb_knob_auto_text(MB_KNOB_MOMENTUM_DTYPE, buf, sizeof(buf)),
			    "fp32 for ZeRO-1/2, bf16 for ZeRO-3 (auto)");
	assert_string_equal(mb_knob_auto_text(MB_KNOB_PARAMS_BACK, buf, 12), "pinned for ");

	sample_row(&a, 1);
	b = a;
	a.stage = 2, b.stage = 3;
	snprintf(a.knob[MB_KNOB_MOMENTUM_DTYPE], sizeof(a.knob[0]), "fp32");
	snprintf(b.knob[MB_KNOB_MOMENTUM_DTYPE], sizeof(b.knob[0]), "bf16");
	snprintf(a.knob[MB_KNOB_PARAMS_BACK], sizeof(a.knob[0]), "pinned");
	snprintf(b.knob[MB_KNOB_PARAMS_BACK], sizeof(b.knob[0]), "pageable");
	assert_string_equal(mb_results_knob_setting(&a, MB_KNOB_MOMENTUM_DTYPE), "auto");
	assert_string_equal(mb_results_knob_setting(&b, MB_KNOB_PARAMS_BACK), "auto");
	assert_int_equal(mb_results_knob_differences(&a, &b, buf, sizeof(buf)), 0);
	/* ZeRO-3 with fp32 momentum is not its stage's default: a knob of its own */
	snprintf(b.knob[MB_KNOB_MOMENTUM_DTYPE], sizeof(b.knob[0]), "fp32");
	assert_string_equal(mb_results_knob_setting(&b, MB_KNOB_MOMENTUM_DTYPE), "fp32");
	assert_int_equal(mb_results_knob_differences(&a, &b, buf, sizeof(buf)), 1);
	assert_non_null(strstr(buf, "momentum_dtype auto -> fp32"));
}

/* A table a row (a host each): bounded, refused past MB_RESULTS_TABLES_MAX. */
static void too_many_tables(void **state)
{
	struct mb_table *tables = NULL;
	struct mb_csv_row row;
	size_t nt = 0;
	int i, err = 0;

	(void)state;
	sample_row(&row, 1);
	for (i = 0; i <= MB_RESULTS_TABLES_MAX && !err; i++) {
		snprintf(row.host, sizeof(row.host), "host%d", i);
		err = mb_results_add(&tables, &nt, &row);
	}
	assert_int_equal(err, -MB_EINPUT);
	assert_int_equal(i, MB_RESULTS_TABLES_MAX + 1);
	assert_int_equal(nt, MB_RESULTS_TABLES_MAX);
	assert_non_null(strstr(mb_errmsg(), "more than 1000 tables"));
	mb_results_release(tables, nt);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(round_trip),	    cmocka_unit_test(bad_files),
		cmocka_unit_test(older_columns),    cmocka_unit_test(edited_fields),
		cmocka_unit_test(joined_files),	    cmocka_unit_test(each_row),
		cmocka_unit_test(gathered_by_copy), cmocka_unit_test(too_many_tables),
		cmocka_unit_test(knob_auto),
	};

	return cmocka_run_group_tests_name("csv", tests, make_path, remove_path);
}

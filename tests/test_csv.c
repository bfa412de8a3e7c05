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
	r->stage = 3;
	r->run = run;
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
	assert_int_equal(rows[1].peak_step_bytes, UINT64_MAX);
	assert_true(rows[1].iter_mean_s == 8.54);
	assert_true(isnan(rows[1].apply_mean_s));
	assert_int_equal(rows[1].nsamples, 3);
	assert_true(rows[1].iter_samples_s[0] == 1.5 && rows[1].iter_samples_s[2] == 0.25);
	assert_true(rows[1].apply_samples_s[1] == 2);
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

	assert_int_equal(mb_csv_read(path, &rows, &n), -MB_EINPUT);
	if (!strstr(mb_errmsg(), want))
		fail_msg("got \"%s\", want \"%s\"", mb_errmsg(), want);
	assert_non_null(strstr(mb_errmsg(), path));
	free(rows);
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
		":2: expected 79 fields as in the header, found 4 (a truncated or edited row?)");
	sample_row(&w, 1);
	line = mb_csv_format(&w);
	line[0] = '8'; /* an older format_version */
	with_header(line);
	assert_refused(":2: format_version '8': this muonbench reads version 9 only");
	line[0] = '7'; /* an older one still */
	with_header(line);
	assert_refused(":2: format_version '7': this muonbench reads version 9 only");
	free(line);
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
	assert_refused("column 'iter_samples_s': expected finite numbers");
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(round_trip),
		cmocka_unit_test(bad_files),
	};

	return cmocka_run_group_tests_name("csv", tests, make_path, remove_path);
}

/*
 * mb_csv: the column table, and whole-row appends.
 */
#include "mb_csv.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mb_err.h"

enum type { TEXT, U64, F64, ITER_SAMPLES, APPLY_SAMPLES, VERSION };

struct column {
	const char *name;
	enum type type;
	size_t offset, size;
};

/* clang-format off */
#define COL(name, type) \
	{ #name, type, offsetof(struct mb_csv_row, name), sizeof(((struct mb_csv_row *)0)->name) }
/* clang-format on */

#define MB_STR_(x) #x
#define MB_STR(x)  MB_STR_(x)

static const struct column columns[] = {
	{ "format_version", VERSION, 0, 0 },
	COL(status, TEXT),
	COL(reason, TEXT),
	COL(timestamp_utc, TEXT),
	COL(version, TEXT),
	COL(git_rev, TEXT),
	COL(host, TEXT),
	COL(cpu_model, TEXT),
	COL(platform, TEXT),
	COL(device, TEXT),
	COL(vendor, TEXT),
	COL(driver, TEXT),
	COL(device_pci, TEXT),
	COL(device_numa_node, TEXT),
	COL(tuning, TEXT),
	COL(tuning_match, TEXT),
	COL(cpus, TEXT),
	COL(mems, TEXT),
	COL(binding, TEXT),
	COL(model, TEXT),
	COL(source, TEXT),
	COL(layers, U64),
	COL(params_total, U64),
	COL(params_muon, U64),
	COL(stage, U64),
	COL(variant, TEXT),
	COL(run, U64),
	COL(runs, U64),
	COL(steps, U64),
	COL(measure_first, U64),
	COL(measure_last, U64),
	COL(gather_budget_bytes, U64),
	COL(sub_group_size_elems, U64),
	COL(pin_memory, TEXT),
	COL(writeback_dep, TEXT),
	COL(param_order, TEXT),
	COL(momentum_dtype, TEXT),
	COL(ns_method, TEXT),
	COL(pin_chunk_bytes, U64),
	COL(reduce_bucket_size, U64),
	COL(grad_clip, TEXT),
	COL(params_back, TEXT),
	COL(zero3_apply, TEXT),
	COL(seed, U64),
	COL(resume_at, U64),
	COL(fwd_bwd, TEXT),
	COL(seq, U64),
	COL(micro_batch, U64),
	COL(iter_mean_s, F64),
	COL(apply_mean_s, F64),
	COL(forward_s, F64),
	COL(backward_s, F64),
	COL(h2d_s, F64),
	COL(momentum_s, F64),
	COL(ns_s, F64),
	COL(d2h_s, F64),
	COL(d2h_hidden_frac, F64),
	COL(host_opt_s, F64),
	COL(params_h2d_s, F64),
	COL(host_opt_gbs, F64),
	COL(memcpy_gbs, F64),
	COL(h2d_gbs, F64),
	COL(d2h_gbs, F64),
	COL(params_h2d_gbs, F64),
	COL(peak_device_bytes, U64),
	COL(peak_forward_bytes, U64),
	COL(peak_backward_bytes, U64),
	COL(peak_step_bytes, U64),
	COL(plan_peak_step_bytes, U64),
	COL(clblast_temp_bytes, U64),
	COL(pinned_host_bytes, U64),
	COL(peak_device_own_bytes, U64),
	COL(peak_forward_own_bytes, U64),
	COL(peak_backward_own_bytes, U64),
	COL(peak_step_own_bytes, U64),
	COL(momentum_pinned, TEXT),
	COL(checksum, TEXT),
	COL(iter_samples_s, ITER_SAMPLES),
	COL(apply_samples_s, APPLY_SAMPLES),
};

#define NCOLUMNS (sizeof(columns) / sizeof(columns[0]))

/* A growing string. */
struct sbuf {
	char *s;
	size_t len, alloc;
	bool oom;
};

static void sb_printf(struct sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void sb_printf(struct sbuf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(b->s ? b->s + b->len : NULL, b->s ? b->alloc - b->len : 0, fmt, ap);
		va_end(ap);
		if (n < 0 || b->oom)
			return;
		if (b->s && b->len + (size_t)n < b->alloc) {
			b->len += (size_t)n;
			return;
		}
		size_t alloc = 2 * (b->alloc + (size_t)n + 64);
		char *s = realloc(b->s, alloc);

		if (!s) {
			b->oom = true;
			return;
		}
		b->s = s;
		b->alloc = alloc;
	}
}

static void sb_text(struct sbuf *b, const char *text)
{
	if (!strpbrk(text, ",\"\n\r")) {
		sb_printf(b, "%s", text);
		return;
	}
	sb_printf(b, "\"");
	for (; *text; text++)
		sb_printf(b, *text == '"' ? "\"\"" : "%c", *text);
	sb_printf(b, "\"");
}

static char *sb_done(struct sbuf *b)
{
	if (b->oom) {
		free(b->s);
		return NULL;
	}
	return b->s;
}

char *mb_csv_header(void)
{
	struct sbuf b = { 0 };
	size_t i;

	for (i = 0; i < NCOLUMNS; i++)
		sb_printf(&b, "%s%s", i ? "," : "", columns[i].name);
	sb_printf(&b, "\n");
	return sb_done(&b);
}

static void samples(struct sbuf *b, const double *v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		sb_printf(b, "%s%.6f", i ? ";" : "", v[i]);
}

char *mb_csv_format(const struct mb_csv_row *row)
{
	struct sbuf b = { 0 };
	const char *base = (const char *)row;
	size_t i;
	double d;

	for (i = 0; i < NCOLUMNS; i++) {
		const void *field = base + columns[i].offset;

		if (i)
			sb_printf(&b, ",");
		switch (columns[i].type) {
		case VERSION:
			sb_printf(&b, "%d", MB_CSV_FORMAT_VERSION);
			break;
		case TEXT:
			sb_text(&b, field);
			break;
		case U64:
			sb_printf(&b, "%llu", (unsigned long long)*(const uint64_t *)field);
			break;
		case F64:
			d = *(const double *)field;
			if (!isnan(d))
				sb_printf(&b, "%.6f", d);
			break;
		case ITER_SAMPLES:
		case APPLY_SAMPLES:
			samples(&b, field, row->nsamples);
			break;
		}
	}
	sb_printf(&b, "\n");
	return sb_done(&b);
}

/* The first line of the open file FD (at most LEN - 1 bytes), into BUF. */
static void first_line(int fd, char *buf, size_t len)
{
	ssize_t n = pread(fd, buf, len - 1, 0);

	buf[n > 0 ? n : 0] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
}

/* Open PATH for appending; check the header of a file that has one. */
static int open_checked(const char *path, int *fd_out, bool *empty)
{
	char *header, line[4096];
	struct stat st;
	int fd;

	fd = open(path, O_WRONLY | O_APPEND | O_CREAT, 0644);
	if (fd < 0)
		return mb_bad_input("cannot open '%s' for appending results: %s", path,
				    strerror(errno));
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		return mb_bad_input("'%s' is not a regular file", path);
	}
	*empty = st.st_size == 0;
	if (!*empty) {
		int rfd = open(path, O_RDONLY);

		line[0] = '\0';
		if (rfd >= 0) {
			first_line(rfd, line, sizeof(line));
			close(rfd);
		}
		header = mb_csv_header();
		if (!header || strncmp(line, header, strlen(header) - 1) ||
		    line[strlen(header) - 1]) {
			free(header);
			close(fd);
			return mb_bad_input("'%s' already holds something other than muonbench "
					    "results of format_version %d; give another --out",
					    path, MB_CSV_FORMAT_VERSION);
		}
		free(header);
	}
	*fd_out = fd;
	return 0;
}

int mb_csv_check(const char *path)
{
	bool empty;
	int fd, err;

	if ((err = open_checked(path, &fd, &empty)))
		return err;
	close(fd);
	return 0;
}

static int write_all(int fd, const char *s, const char *path)
{
	size_t len = strlen(s);
	ssize_t n;

	while (len) {
		n = write(fd, s, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return mb_fail("cannot write results to '%s': %s", path,
				       n < 0 ? strerror(errno) : "short write");
		s += n;
		len -= (size_t)n;
	}
	return 0;
}

int mb_csv_append(const char *path, const struct mb_csv_row *row)
{
	char *header = NULL, *line = NULL;
	bool empty;
	off_t size;
	int fd, err;

	if ((err = open_checked(path, &fd, &empty)))
		return err;
	size = lseek(fd, 0, SEEK_END);
	line = mb_csv_format(row);
	if (empty)
		header = mb_csv_header();
	if (!line || (empty && !header))
		err = mb_fail("out of host memory formatting a results row");
	else if (!(err = empty ? write_all(fd, header, path) : 0))
		err = write_all(fd, line, path);
	if (err && size >= 0 && ftruncate(fd, size))
		err = mb_fail("cannot write results to '%s', and the part of a row written "
			      "could not be removed: %s",
			      path, strerror(errno));
	if (close(fd) && !err)
		err = mb_fail("cannot write results to '%s': %s", path, strerror(errno));
	free(header);
	free(line);
	return err;
}

/* ---- reading ---- */

#define FILE_MAX   (1u << 30)
#define FIELDS_MAX 256

struct reader {
	const char *path;
	char *text; /* the whole file, NUL-terminated; fields are cut in place */
	size_t len, pos;
	unsigned line;	   /* where the record being read starts */
	unsigned newlines; /* inside its quoted fields */
};

/*
 * The next record's fields (RFC 4180: quoted fields may hold commas, quotes
 * and newlines), unquoted in place, into FIELDS. Returns the count; 0 at the
 * end; -1 for an unterminated quote.
 */
static int next_record(struct reader *r, char **fields, int max)
{
	char *out, *p;
	int n = 0;

	if (r->pos >= r->len)
		return 0;
	for (;;) {
		p = out = r->text + r->pos;
		if (n < max)
			fields[n] = out;
		n++;
		if (*p == '"') {
			for (p++;; p++) {
				if (!*p)
					return -1;
				if (*p == '"' && p[1] == '"')
					p++;
				else if (*p == '"')
					break;
				else if (*p == '\n')
					r->newlines++;
				*out++ = *p;
			}
			p++;
		} else {
			while (*p && *p != ',' && *p != '\n' && *p != '\r')
				*out++ = *p++;
		}
		if (*p == ',') {
			*out = '\0';
			r->pos = (size_t)(p + 1 - r->text);
			continue;
		}
		if (*p == '\r')
			p++;
		if (*p && *p != '\n')
			return -2; /* text after a closing quote */
		if (!*p)
			return -3; /* every row the writer writes ends in a newline */
		/* past the newline before OUT (which may be P) ends the field */
		r->pos = (size_t)(p - r->text) + (*p == '\n');
		*out = '\0';
		return n;
	}
}

static int bad(const struct reader *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int bad(const struct reader *r, const char *fmt, ...)
{
	char what[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	return mb_bad_input("%s:%u: %s", r->path, r->line, what);
}

static int parse_samples(const struct reader *r, const char *name, const char *text, double *out,
			 size_t *n)
{
	char *end;

	*n = 0;
	while (*text) {
		if (*n == MB_CSV_STEPS_MAX)
			return bad(r, "column '%s': more than %d samples", name, MB_CSV_STEPS_MAX);
		out[(*n)++] = strtod(text, &end);
		if (end == text || (*end && *end != ';') || !isfinite(out[*n - 1]) ||
		    isspace((unsigned char)*text))
			return bad(
				r,
				"column '%s': expected finite numbers separated by ';', found '%.40s'",
				name, text);
		text = *end ? end + 1 : end;
	}
	return 0;
}

/* Field TEXT into ROW's column C. */
static int parse_field(const struct reader *r, const struct column *c, const char *text,
		       struct mb_csv_row *row, size_t *nsamples)
{
	char *base = (char *)row, *end;
	void *field = base + c->offset;
	unsigned long long u;

	switch (c->type) {
	case VERSION:
		return 0;
	case TEXT:
		if (strlen(text) >= c->size)
			return bad(r, "column '%s': longer than %zu bytes", c->name, c->size - 1);
		memcpy(field, text, strlen(text) + 1);
		return 0;
	case U64:
		errno = 0;
		u = strtoull(text, &end, 10);
		if (!isdigit((unsigned char)*text) || *end || errno)
			return bad(r, "column '%s': expected a whole number, found '%.40s'",
				   c->name, text);
		*(uint64_t *)field = u;
		return 0;
	case F64:
		*(double *)field = strtod(text, &end);
		if (!*text)
			*(double *)field = NAN; /* the writer's empty field */
		else if (*end || isspace((unsigned char)*text) || !isfinite(*(double *)field))
			return bad(r, "column '%s': expected a finite number, found '%.40s'",
				   c->name, text);
		return 0;
	case ITER_SAMPLES:
		return parse_samples(r, c->name, text, field, &row->nsamples);
	case APPLY_SAMPLES:
		return parse_samples(r, c->name, text, field, nsamples);
	}
	return 0;
}

/* Which field of the header holds each column; -1 if none. */
static int map_header(const struct reader *r, char **names, int n, int *where)
{
	size_t c;
	int i;

	for (c = 0; c < NCOLUMNS; c++) {
		where[c] = -1;
		for (i = 0; i < n; i++) {
			if (strcmp(names[i], columns[c].name))
				continue;
			if (where[c] >= 0)
				return bad(r, "column '%s' twice in the header", columns[c].name);
			where[c] = i;
		}
	}
	if (where[0] < 0)
		return bad(r, "not a muonbench results file (no format_version column)");
	for (c = 1; c < NCOLUMNS; c++)
		if (where[c] < 0)
			return bad(r, "missing column '%s' (format_version %d has it)",
				   columns[c].name, MB_CSV_FORMAT_VERSION);
	return 0;
}

/* What every row the writer writes holds: the figures a reader indexes by. */
static int check_row(const struct reader *r, const struct mb_csv_row *row)
{
	static const char *const variants[] = { "master", "pin", "overlap", "both" };
	size_t i;

	if (row->stage < 1 || row->stage > 3)
		return bad(r, "column 'stage': expected 1, 2 or 3, found %llu",
			   (unsigned long long)row->stage);
	for (i = 0; i < 4 && strcmp(row->variant, variants[i]); i++)
		;
	if (i == 4)
		return bad(r,
			   "column 'variant': expected master, pin, overlap or both, found "
			   "'%.20s'",
			   row->variant);
	if (!row->steps || row->steps > MB_CSV_STEPS_MAX || !row->measure_first ||
	    row->measure_first > row->measure_last || row->measure_last > row->steps)
		return bad(r,
			   "columns 'steps', 'measure_first', 'measure_last': expected 1 <= "
			   "first <= last <= steps <= %d",
			   MB_CSV_STEPS_MAX);
	if (row->nsamples > row->steps)
		return bad(r, "%zu samples for %llu steps", row->nsamples,
			   (unsigned long long)row->steps);
	return 0;
}

static int read_rows(struct reader *r, struct mb_csv_row **rows, size_t *n)
{
	char *fields[FIELDS_MAX], *names[FIELDS_MAX];
	int where[NCOLUMNS], nnames, nf;
	size_t c, napply;
	int err;

	r->line = 1;
	nnames = next_record(r, names, FIELDS_MAX);
	r->line += r->newlines;
	r->newlines = 0;
	if (nnames > FIELDS_MAX)
		return bad(r, "more than %d columns: not a muonbench results file", FIELDS_MAX);
	if (nnames <= 0)
		return bad(r, "not a muonbench results file (no header line)");
	if (!strcmp(names[0], "bandwidth_format_version"))
		return 0; /* a calibration beside the results: no runs in it */
	if ((err = map_header(r, names, nnames, where)))
		return err;
	for (;;) {
		struct mb_csv_row *row, *grown;

		r->line += 1 + r->newlines;
		r->newlines = 0;
		nf = next_record(r, fields, FIELDS_MAX);
		if (!nf)
			return 0;
		if (nf == -1)
			return bad(r, "a quoted field that never ends (a truncated file?)");
		if (nf == -2)
			return bad(r, "text after a closing quote");
		if (nf == -3)
			return bad(r, "the last row has no newline (a truncated file?)");
		if (nf == 1 && !*fields[0])
			continue; /* an empty line */
		if (nf != nnames)
			return bad(r,
				   "expected %d fields as in the header, found %d (a truncated or "
				   "edited row?)",
				   nnames, nf);
		if (strcmp(fields[where[0]], MB_STR(MB_CSV_FORMAT_VERSION)))
			return bad(r,
				   "format_version '%s': this muonbench reads version %d only "
				   "(read the file with the muonbench that wrote it)",
				   fields[where[0]], MB_CSV_FORMAT_VERSION);
		grown = realloc(*rows, (*n + 1) * sizeof(**rows));
		if (!grown)
			return mb_fail("out of host memory reading '%s'", r->path);
		*rows = grown;
		row = &grown[*n];
		memset(row, 0, sizeof(*row));
		napply = 0;
		for (c = 0; c < NCOLUMNS; c++)
			if ((err = parse_field(r, &columns[c], fields[where[c]], row, &napply)))
				return err;
		if (napply != row->nsamples)
			return bad(r, "%zu iteration samples but %zu apply samples", row->nsamples,
				   napply);
		if ((err = check_row(r, row)))
			return err;
		++*n;
	}
}

int mb_csv_parse(const char *text, size_t len, const char *name, struct mb_csv_row **rows,
		 size_t *n)
{
	struct reader r = { .path = name, .len = len };
	int err;

	if (memchr(text, '\0', len))
		return mb_bad_input("'%s' is not a muonbench results file (it holds NUL bytes)",
				    name);
	/* the fields are cut in place: a copy, NUL-terminated */
	r.text = malloc(len + 1);
	if (!r.text)
		return mb_fail("out of host memory reading '%s'", name);
	memcpy(r.text, text, len);
	r.text[len] = '\0';
	err = read_rows(&r, rows, n);
	free(r.text);
	return err;
}

int mb_csv_read(const char *path, struct mb_csv_row **rows, size_t *n)
{
	FILE *f = fopen(path, "rb");
	struct stat st;
	char *text;
	size_t len;
	int err;

	if (!f)
		return mb_bad_input("cannot open '%s': %s", path, strerror(errno));
	if (fstat(fileno(f), &st) || !S_ISREG(st.st_mode) || st.st_size > FILE_MAX) {
		fclose(f);
		return mb_bad_input("'%s' is not a results file (not a regular file, or over "
				    "1 GiB)",
				    path);
	}
	text = malloc((size_t)st.st_size + 1);
	if (!text) {
		fclose(f);
		return mb_fail("out of host memory reading '%s'", path);
	}
	len = fread(text, 1, (size_t)st.st_size, f);
	fclose(f);
	err = mb_csv_parse(text, len, path, rows, n);
	free(text);
	return err;
}

/*
 * mb_csv: the column table, and whole-row appends.
 */
#include "mb_csv.h"
#include "mb_device.h"
#include "mb_phase.h"
#include "mb_plan.h"
#include "mb_variant.h"

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
#include "mb_file.h"
#include "mb_num.h"

/*
 * A column's type says how it is written and what the reader accepts: TEXT
 * anything (ONE_OF, where set, one of its '|'-separated words), HEX16 the
 * checksum's 16 lowercase hex digits, TIME an ISO 8601 UTC second, U64 a
 * whole number, U64_OPT one or empty (MB_CSV_UNKNOWN), SECONDS and RATE a
 * finite number >= 0 or empty (n/a),
 * FRACTION one in [0, 1] or empty, the samples finite seconds >= 0.
 */
enum type {
	TEXT,
	HEX16,
	TIME,
	U64,
	U64_OPT,
	SECONDS,
	RATE,
	FRACTION,
	ITER_SAMPLES,
	APPLY_SAMPLES,
	VERSION
};

struct column {
	const char *name;
	enum type type;
	size_t offset, size;
	const char *one_of;
	int since; /* the format version that added it; rows of older ones read it as empty */
};

/* clang-format off */
/* a column added in format version SINCE (0: in every version read) */
#define COLV(name, type, words, since) \
	{ #name, type, offsetof(struct mb_csv_row, name), sizeof(((struct mb_csv_row *)0)->name), words, since }
#define COL(name, type) COLV(name, type, NULL, 0)
/* a knob of mb_knob's table, from the version its row says */
#define KNOB_COL_(id, field, option, words, autow, dflt, since, ...) \
	{ #field, TEXT, offsetof(struct mb_csv_row, knob[MB_KNOB_##id]), \
	  sizeof(((struct mb_csv_row *)0)->knob[0]), words, since },
#define WORDS(name, words) COLV(name, TEXT, words, 0)
/* the phases' columns (mb_phase's table): measured, and the model's */
#define PHASE_COL_(e, f, ...) COL(f, SECONDS),
#define PRED_COL_(e, f, ...)  COL(pred_##f, SECONDS),
/* clang-format on */

static const struct column columns[] = {
	{ "format_version", VERSION, 0, 0, NULL, 0 },
	WORDS(status, "ok|failed|interrupted"),
	COL(reason, TEXT),
	COL(timestamp_utc, TIME),
	COL(version, TEXT),
	COL(git_rev, TEXT),
	COL(host, TEXT),
	COLV(rank, U64, NULL, 13),
	COLV(world_size, U64, NULL, 13),
	COLV(local_rank, U64, NULL, 13),
	COL(cpu_model, TEXT),
	COL(platform, TEXT),
	COL(device, TEXT),
	COL(vendor, TEXT),
	COL(driver, TEXT),
	COL(device_pci, TEXT),
	COL(device_numa_node, TEXT),
	COL(tuning, TEXT),
	WORDS(tuning_match, "given|exact|architecture|family|none"),
	COL(cpus, TEXT),
	COL(mems, TEXT),
	WORDS(binding, "muonbench|numa auto|inherited"),
	COL(model, TEXT),
	COL(source, TEXT),
	COL(layers, U64),
	COL(params_total, U64),
	COL(params_muon, U64),
	COL(stage, U64),
	WORDS(variant, MB_VARIANT_WORDS),
	COL(run, U64),
	COL(runs, U64),
	COL(steps, U64),
	COL(measure_first, U64),
	COL(measure_last, U64),
	COL(gather_budget_bytes, U64),
	COL(sub_group_size_elems, U64),
	/* clang-format off */
	MB_KNOB_ROW_PIN_MEMORY(KNOB_COL_)
	/* clang-format on */
	COLV(pinned_alloc, TEXT, "alloc-host-ptr|nv", 12),
	COLV(pinned_device_copy, TEXT, MB_WORDS(MB_PINNED_COPIES), 12),
	COLV(pinned_device_copy_bytes, U64_OPT, NULL, 12),
	/* mb_knob's table: a column a knob, the step's, the plan's, the older ones where they were
	 */
	/* clang-format off */
	MB_KNOBS_STEP(KNOB_COL_)
	MB_KNOBS_PLAN(KNOB_COL_)
	MB_KNOB_ROW_MOMENTUM_DTYPE(KNOB_COL_)
	MB_KNOB_ROW_NS_METHOD(KNOB_COL_)
	/* clang-format on */
	COLV(ns_precision, TEXT, MB_WORDS(MB_PRECISIONS) "|calibrated", 12),
	COLV(ns_kernel, TEXT, NULL, 12),
	COLV(ns_rate_gflops, U64_OPT, NULL, 12),
	COL(pin_chunk_bytes, U64),
	COL(reduce_bucket_size, U64),
	COL(grad_clip, TEXT),
	/* clang-format off */
	MB_KNOB_ROW_PARAMS_BACK(KNOB_COL_)
	MB_KNOB_ROW_ZERO3_APPLY(KNOB_COL_)
	/* clang-format on */
	COL(seed, U64),
	COL(resume_at, U64),
	/* clang-format off */
	MB_KNOB_ROW_FWD_BWD(KNOB_COL_)
	/* clang-format on */
	COL(seq, U64),
	COL(micro_batch, U64),
	COL(iter_mean_s, SECONDS),
	COL(apply_mean_s, SECONDS),
	MB_PHASES_TO_D2H(PHASE_COL_) COL(d2h_hidden_frac, FRACTION),
	MB_PHASES_AFTER_D2H(PHASE_COL_) COL(host_opt_gbs, RATE),
	COL(memcpy_gbs, RATE),
	COL(h2d_gbs, RATE),
	COL(d2h_gbs, RATE),
	COL(params_h2d_gbs, RATE),
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
	WORDS(momentum_pinned, "yes|no"),
	COL(checksum, HEX16),
	COLV(device_used_source, TEXT, MB_WORDS(MB_DEVMEM_SOURCES), 12),
	COLV(device_used_base_bytes, U64_OPT, NULL, 12),
	COLV(device_used_peak_bytes, U64_OPT, NULL, 12),
	COL(profile, TEXT),
	COL(pred_iter_s, SECONDS),
	COL(pred_apply_s, SECONDS),
	MB_PHASES_TO_D2H(PRED_COL_) COL(pred_d2h_hidden_frac, FRACTION),
	MB_PHASES_AFTER_D2H(PRED_COL_) COL(iter_samples_s, ITER_SAMPLES),
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
		sb_printf(b, "%s%.6g", i ? ";" : "", v[i]);
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
		case HEX16:
		case TIME:
			sb_text(&b, field);
			break;
		case U64:
			sb_printf(&b, "%llu", (unsigned long long)*(const uint64_t *)field);
			break;
		case U64_OPT:
			if (*(const uint64_t *)field != MB_CSV_UNKNOWN)
				sb_printf(&b, "%llu", (unsigned long long)*(const uint64_t *)field);
			break;
		case SECONDS:
		case RATE:
		case FRACTION:
			d = *(const double *)field;
			if (!isnan(d))
				sb_printf(&b, "%.6g", d);
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

	/* a FIFO or a device is refused before it is opened: opening a FIFO waits for a reader */
	if (!stat(path, &st) && !S_ISREG(st.st_mode))
		return mb_bad_input("'%s' is not a regular file", path);
	fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_NONBLOCK, 0644);
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

/*
 * The reader holds one record at a time, so that its memory is that of the
 * longest row, whatever the length of the file: a row the writer writes is
 * at most a few tens of KiB (1000 samples twice, the texts at their sizes).
 */
#define RECORD_MAX (1u << 20)
#define FIELDS_MAX 256

struct reader {
	const char *path;
	FILE *f;	 /* the input: a file, or */
	const char *src; /* SRCLEN bytes in memory */
	size_t srclen, srcpos;
	char *text; /* the record being read, NUL-terminated; fields are cut in place */
	size_t len, alloc, pos;
	unsigned line;	   /* where the record being read starts */
	unsigned newlines; /* inside its quoted fields */
	/* the rows read so far, by run_key (open addressing, 0 empty), and their lines */
	uint64_t *keys;
	unsigned *key_lines;
	size_t nkeys, cap;
};

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

static int next_byte(struct reader *r)
{
	if (r->f)
		return getc_unlocked(r->f);
	return r->srcpos < r->srclen ? (unsigned char)r->src[r->srcpos++] : EOF;
}

/*
 * The next record's bytes into r->text: through the newline that ends it
 * outside quotes (a quote opens a quoted field only at the field's start, as
 * next_record reads it), or to the end of the input. An empty text at the end.
 */
static int load_record(struct reader *r)
{
	enum { START, PLAIN, QUOTED, QUOTE } st = START;
	int ch;

	r->len = r->pos = 0;
	while ((ch = next_byte(r)) != EOF) {
		if (!ch)
			return bad(r, "a NUL byte: not a muonbench results file");
		if (r->len + 2 > r->alloc) {
			size_t alloc = r->alloc ? 2 * r->alloc : 4096;
			char *grown;

			if (alloc > RECORD_MAX)
				return bad(r, "a row over %u bytes: not a muonbench results file",
					   RECORD_MAX);
			if (!(grown = realloc(r->text, alloc)))
				return mb_fail("out of host memory reading '%s'", r->path);
			r->text = grown;
			r->alloc = alloc;
		}
		r->text[r->len++] = (char)ch;
		if (ch == '\n' && st != QUOTED)
			break;
		if (st == QUOTED)
			st = ch == '"' ? QUOTE : QUOTED;
		else if (st == QUOTE && ch == '"')
			st = QUOTED;
		else if (ch == ',')
			st = START;
		else
			st = st == START && ch == '"' ? QUOTED : PLAIN;
	}
	if (r->f && ferror(r->f))
		return mb_bad_input("cannot read '%s': %s", r->path, strerror(errno));
	if (r->text)
		r->text[r->len] = '\0';
	return 0;
}

/*
 * The record in r->text's fields (RFC 4180: quoted fields may hold commas,
 * quotes and newlines), unquoted in place, into FIELDS. Returns the count; 0
 * at the end; -1 for an unterminated quote, -2 for text after a closing
 * quote, -3 for a last record without its newline.
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
		return r->pos == r->len ? n : -2;
	}
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
		    !isdigit((unsigned char)*text) ||
		    strspn(text, "0123456789.e+-") < (size_t)(end - text))
			return bad(r,
				   "column '%s': expected seconds (finite numbers >= 0) separated "
				   "by ';', found '%.40s'",
				   name, text);
		text = *end ? end + 1 : end;
	}
	return 0;
}

/* Whether WORD is one of the '|'-separated words of LIST. */
static bool one_of(const char *list, const char *word)
{
	size_t n = strlen(word);

	for (;;) {
		if (!strncmp(list, word, n) && (list[n] == '|' || !list[n]))
			return true;
		if (!(list = strchr(list, '|')))
			return false;
		list++;
	}
}

/* Whether TEXT is as strftime's "%Y-%m-%dT%H:%M:%SZ" writes it (digits where they go). */
static bool is_timestamp(const char *text)
{
	static const char form[] = "dddd-dd-ddTdd:dd:ddZ";
	size_t i;

	for (i = 0; form[i]; i++)
		if (form[i] == 'd' ? !isdigit((unsigned char)text[i]) : text[i] != form[i])
			return false;
	return !text[i];
}

static bool is_hex16(const char *text)
{
	return strlen(text) == 16 && strspn(text, "0123456789abcdef") == 16;
}

static int parse_text(const struct reader *r, const struct column *c, const char *text, void *field)
{
	if (strlen(text) >= c->size)
		return bad(r, "column '%s': longer than %zu bytes", c->name, c->size - 1);
	if (c->type == TEXT && c->one_of && !one_of(c->one_of, text))
		return bad(r, "column '%s': expected %s, found '%.40s'", c->name, c->one_of, text);
	if (c->type == HEX16 && !is_hex16(text))
		return bad(r, "column '%s': expected 16 hex digits (0-9, a-f), found '%.40s'",
			   c->name, text);
	if (c->type == TIME && !is_timestamp(text))
		return bad(r,
			   "column '%s': expected a UTC time as YYYY-MM-DDTHH:MM:SSZ, found "
			   "'%.40s'",
			   c->name, text);
	memcpy(field, text, strlen(text) + 1);
	return 0;
}

static int parse_number(const struct reader *r, const struct column *c, const char *text,
			double *field)
{
	static const char *const what[] = {
		[SECONDS] = "seconds (a finite number >= 0)",
		[RATE] = "GB/s (a finite number >= 0)",
		[FRACTION] = "a fraction (a number from 0 to 1)",
	};
	char *end;
	double d;

	if (!*text) {
		*field = NAN; /* the writer's empty field: n/a */
		return 0;
	}
	d = strtod(text, &end);
	/* decimal as the writer writes it: no sign, no hex, no inf or nan */
	if (*end || !mb_num_is_decimal(text) || !isfinite(d) || (c->type == FRACTION && d > 1))
		return bad(r, "column '%s': expected %s or nothing, found '%.40s'", c->name,
			   what[c->type], text);
	*field = d;
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
	case HEX16:
	case TIME:
		return parse_text(r, c, text, field);
	case U64_OPT:
		if (!*text) {
			*(uint64_t *)field = MB_CSV_UNKNOWN;
			return 0;
		}
		/* fall through */
	case U64:
		errno = 0;
		u = strtoull(text, &end, 10);
		if (!isdigit((unsigned char)*text) || *end || errno)
			return bad(r, "column '%s': expected a whole number, found '%.40s'",
				   c->name, text);
		*(uint64_t *)field = u;
		return 0;
	case SECONDS:
	case RATE:
	case FRACTION:
		return parse_number(r, c, text, field);
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
		if (where[c] < 0 && columns[c].since <= MB_CSV_FORMAT_OLDEST)
			return bad(r, "missing column '%s' (format_version %d has it)",
				   columns[c].name, MB_CSV_FORMAT_VERSION);
	return 0;
}

/* What every row the writer writes holds, across its columns. */
static int check_row(const struct reader *r, const struct mb_csv_row *row)
{
	if (row->stage < 1 || row->stage > 3)
		return bad(r, "column 'stage': expected 1, 2 or 3, found %llu",
			   (unsigned long long)row->stage);
	if (!row->runs || !row->run || row->run > row->runs)
		return bad(r,
			   "columns 'run', 'runs': expected 1 <= run <= runs, found %llu of %llu",
			   (unsigned long long)row->run, (unsigned long long)row->runs);
	if (!row->steps || row->steps > MB_CSV_STEPS_MAX || !row->measure_first ||
	    row->measure_first > row->measure_last || row->measure_last > row->steps)
		return bad(r,
			   "columns 'steps', 'measure_first', 'measure_last': expected 1 <= "
			   "first <= last <= steps <= %d",
			   MB_CSV_STEPS_MAX);
	if (row->nsamples > row->steps)
		return bad(r, "%zu samples for %llu steps", row->nsamples,
			   (unsigned long long)row->steps);
	if (row->rank >= row->world_size || row->local_rank >= row->world_size)
		return bad(r,
			   "columns 'rank', 'local_rank', 'world_size': expected ranks below the "
			   "world size, found %llu and %llu of %llu",
			   (unsigned long long)row->rank, (unsigned long long)row->local_rank,
			   (unsigned long long)row->world_size);
	return 0;
}

/* FNV-1a of LEN bytes at P into H. */
static uint64_t fnv(uint64_t h, const void *p, size_t len)
{
	const unsigned char *b = p;
	size_t i;

	for (i = 0; i < len; i++)
		h = (h ^ b[i]) * 1099511628211ull;
	return h;
}

/*
 * What makes a row one of its invocation's and no other (never 0): when it
 * was written, where, and which run of which cell of which rank. One
 * invocation writes each once; a row written twice, or two rows claiming a
 * rank of one run, have it twice.
 */
static uint64_t run_key(const struct mb_csv_row *row)
{
	const char *text[] = { row->timestamp_utc,
			       row->host,
			       row->model,
			       row->device,
			       row->variant,
			       row->knob[MB_KNOB_PIN_MEMORY],
			       row->knob[MB_KNOB_MOMENTUM_DTYPE],
			       row->knob[MB_KNOB_NS_METHOD],
			       row->ns_precision,
			       row->knob[MB_KNOB_PARAMS_BACK],
			       row->knob[MB_KNOB_FWD_BWD],
			       row->grad_clip };
	uint64_t n[] = { row->world_size,
			 row->rank,
			 row->stage,
			 row->run,
			 row->runs,
			 row->steps,
			 row->layers,
			 row->seed,
			 row->seq,
			 row->micro_batch,
			 row->gather_budget_bytes,
			 row->sub_group_size_elems,
			 row->reduce_bucket_size,
			 row->pin_chunk_bytes };
	uint64_t h = 1469598103934665603ull;
	size_t k;

	for (k = 0; k < sizeof(text) / sizeof(text[0]); k++)
		h = fnv(h, text[k], strlen(text[k]) + 1);
	for (k = 0; mb_knobs[k].field; k++)
		h = fnv(h, row->knob[k], strlen(row->knob[k]) + 1);
	h = fnv(h, n, sizeof(n));
	return h ? h : 1;
}

/* ROW's key kept, or refused where a row before had it (naming both lines). */
static int check_once(struct reader *r, const struct mb_csv_row *row)
{
	uint64_t key = run_key(row);
	size_t i, k;

	if (2 * (r->nkeys + 1) > r->cap) {
		size_t cap = r->cap ? 2 * r->cap : 256;
		uint64_t *keys = calloc(cap, sizeof(*keys));
		unsigned *lines = calloc(cap, sizeof(*lines));

		if (!keys || !lines) {
			free(keys);
			free(lines);
			return mb_fail("out of host memory reading '%s'", r->path);
		}
		for (i = 0; i < r->cap; i++) {
			if (!r->keys[i])
				continue;
			for (k = r->keys[i] % cap; keys[k]; k = (k + 1) % cap)
				;
			keys[k] = r->keys[i];
			lines[k] = r->key_lines[i];
		}
		free(r->keys);
		free(r->key_lines);
		r->keys = keys;
		r->key_lines = lines;
		r->cap = cap;
	}
	for (k = key % r->cap; r->keys[k]; k = (k + 1) % r->cap)
		if (r->keys[k] == key)
			return bad(
				r,
				"stage %llu %s run %llu of rank %llu of %llu, written at %s, again "
				"(line %u has it): a run's row written twice, or two rows "
				"claiming one rank",
				(unsigned long long)row->stage, row->variant,
				(unsigned long long)row->run, (unsigned long long)row->rank,
				(unsigned long long)row->world_size, row->timestamp_utc,
				r->key_lines[k]);
	r->keys[k] = key;
	r->key_lines[k] = r->line;
	r->nkeys++;
	return 0;
}

/*
 * Whether NAME, a header's first column, is that of another of muonbench's
 * tables (bandwidth_format_version, ns_format_version): no runs in it.
 */
static bool other_table(const char *name)
{
	size_t n = strlen(name), k = strlen("_format_version");

	return n > k && !strcmp(name + n - k, "_format_version");
}

/* Whether the record in FIELDS (NF of them) is a header line: the start of another file. */
static bool is_header(char **fields, int nf, const int *where)
{
	return !strcmp(fields[0], "format_version") || other_table(fields[0]) ||
	       (where[0] < nf && !strcmp(fields[where[0]], "format_version"));
}

/* The next record into FIELDS; its count, 0 at the end, or a negative error. */
static int read_record(struct reader *r, char **fields, int *nf)
{
	int err;

	if ((err = load_record(r)))
		return err;
	*nf = next_record(r, fields, FIELDS_MAX);
	if (*nf == -1)
		return bad(r, "a quoted field that never ends (a truncated file?)");
	if (*nf == -2)
		return bad(r, "text after a closing quote");
	if (*nf == -3)
		return bad(r, "the last row has no newline (a truncated file?)");
	if (*nf > FIELDS_MAX)
		return bad(r, "more than %d fields: not a muonbench results file", FIELDS_MAX);
	return 0;
}

/* Whether TEXT is a format_version this reader reads, as the writer writes it ("10"). */
static bool version_read(const char *text)
{
	char v[16];
	int k;

	for (k = MB_CSV_FORMAT_OLDEST; k <= MB_CSV_FORMAT_VERSION; k++) {
		snprintf(v, sizeof(v), "%d", k);
		if (!strcmp(text, v))
			return true;
	}
	return false;
}

/* Read rows from R into ROW, one at a time, calling EACH(ROW, CTX) for each. */
static int read_rows(struct reader *r, struct mb_csv_row *row, mb_csv_each_fn each, void *ctx)
{
	char *fields[FIELDS_MAX];
	int where[NCOLUMNS], nnames, nf;
	size_t c, napply;
	int err;

	r->line = 1;
	if ((err = read_record(r, fields, &nnames)))
		return err;
	r->line += r->newlines;
	r->newlines = 0;
	if (nnames <= 0)
		return bad(r, "not a muonbench results file (no header line)");
	if (other_table(fields[0]))
		return 0; /* a calibration or an ns table beside the results: no runs in it */
	if ((err = map_header(r, fields, nnames, where)))
		return err;
	for (;;) {
		r->line += 1 + r->newlines;
		r->newlines = 0;
		if ((err = read_record(r, fields, &nf)))
			return err;
		if (!nf)
			return 0;
		if (nf == 1 && !*fields[0])
			continue; /* an empty line */
		if (is_header(fields, nf, where))
			return bad(r,
				   "a second header at line %u (two files joined into one?): a "
				   "results file has one header, on its first line",
				   r->line);
		if (nf != nnames)
			return bad(r,
				   "expected %d fields as in the header, found %d (a truncated or "
				   "edited row?)",
				   nnames, nf);
		if (!version_read(fields[where[0]]))
			return bad(r,
				   "format_version '%s': this muonbench reads versions %d to %d "
				   "(read the file with the muonbench that wrote it)",
				   fields[where[0]], MB_CSV_FORMAT_OLDEST, MB_CSV_FORMAT_VERSION);
		memset(row, 0, sizeof(*row));
		napply = 0;
		for (c = 0; c < NCOLUMNS; c++)
			if (where[c] >= 0) {
				if ((err = parse_field(r, &columns[c], fields[where[c]], row,
						       &napply)))
					return err;
			} else if (columns[c].since <= atoi(fields[where[0]])) {
				return bad(r, "missing column '%s' (format_version %s has it)",
					   columns[c].name, fields[where[0]]);
			} else if (columns[c].type == U64_OPT) { /* a column newer than the row */
				*(uint64_t *)((char *)row + columns[c].offset) = MB_CSV_UNKNOWN;
			}
		if (!row->world_size && atoi(fields[where[0]]) < 13) /* before 13: one rank */
			row->world_size = 1;
		if (!row->world_size)
			return bad(r, "column 'world_size': 0 ranks (a world has one at least)");
		for (c = 0; mb_knobs[c].field; c++) /* a knob newer than the row: its default */
			if (!row->knob[c][0])
				snprintf(row->knob[c], sizeof(row->knob[c]), "%s",
					 mb_knobs[c].dflt);
		if (napply != row->nsamples)
			return bad(r, "%zu iteration samples but %zu apply samples", row->nsamples,
				   napply);
		if ((err = check_row(r, row)) || (err = check_once(r, row)) ||
		    (err = each(row, ctx)))
			return err;
	}
}

/* Read R's rows, with one row's memory and one record's. */
static int read_all(struct reader *r, mb_csv_each_fn each, void *ctx)
{
	struct mb_csv_row *row = malloc(sizeof(*row));
	int err;

	if (!row)
		return mb_fail("out of host memory reading '%s'", r->path);
	err = read_rows(r, row, each, ctx);
	free(row);
	free(r->text);
	free(r->keys);
	free(r->key_lines);
	return err;
}

struct rows {
	struct mb_csv_row **rows;
	size_t *n, alloc;
};

static int append_row(const struct mb_csv_row *row, void *ctx)
{
	struct rows *a = ctx;

	if (*a->n == a->alloc) {
		size_t alloc = a->alloc ? 2 * a->alloc : 16;
		struct mb_csv_row *grown = realloc(*a->rows, alloc * sizeof(*grown));

		if (!grown)
			return mb_fail("out of host memory: %zu rows read", *a->n);
		*a->rows = grown;
		a->alloc = alloc;
	}
	(*a->rows)[(*a->n)++] = *row;
	return 0;
}

int mb_csv_parse_each(const char *text, size_t len, const char *name, mb_csv_each_fn each,
		      void *ctx)
{
	struct reader r = { .path = name, .src = text, .srclen = len };

	return read_all(&r, each, ctx);
}

int mb_csv_parse(const char *text, size_t len, const char *name, struct mb_csv_row **rows,
		 size_t *n)
{
	struct rows a = { rows, n, *n };

	return mb_csv_parse_each(text, len, name, append_row, &a);
}

int mb_csv_read_each(const char *path, mb_csv_each_fn each, void *ctx)
{
	struct reader r = { .path = path };
	int err;

	if ((err = mb_file_open_read(path, "results file", &r.f)))
		return err;
	err = read_all(&r, each, ctx);
	fclose(r.f);
	return err;
}

int mb_csv_read(const char *path, struct mb_csv_row **rows, size_t *n)
{
	struct rows a = { rows, n, *n };

	return mb_csv_read_each(path, append_row, &a);
}

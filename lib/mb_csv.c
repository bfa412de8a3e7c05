/*
 * mb_csv: the column table, and whole-row appends.
 */
#include "mb_csv.h"

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
	size_t offset;
};

#define COL(name, type)                                        \
	{                                                      \
#name, type, offsetof(struct mb_csv_row, name) \
	}

static const struct column columns[] = {
	{ "format_version", VERSION, 0 },
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
	COL(peak_device_bytes, U64),
	COL(peak_forward_bytes, U64),
	COL(peak_backward_bytes, U64),
	COL(peak_step_bytes, U64),
	COL(plan_peak_step_bytes, U64),
	COL(clblast_temp_bytes, U64),
	COL(pinned_host_bytes, U64),
	COL(momentum_pinned, TEXT),
	COL(checksum, TEXT),
	{ "iter_samples_s", ITER_SAMPLES, offsetof(struct mb_csv_row, iter_samples_s) },
	{ "apply_samples_s", APPLY_SAMPLES, offsetof(struct mb_csv_row, apply_samples_s) },
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
	int fd, err;

	if ((err = open_checked(path, &fd, &empty)))
		return err;
	line = mb_csv_format(row);
	if (empty)
		header = mb_csv_header();
	if (!line || (empty && !header))
		err = mb_fail("out of host memory formatting a results row");
	else if (!(err = empty ? write_all(fd, header, path) : 0))
		err = write_all(fd, line, path);
	if (close(fd) && !err)
		err = mb_fail("cannot write results to '%s': %s", path, strerror(errno));
	free(header);
	free(line);
	return err;
}

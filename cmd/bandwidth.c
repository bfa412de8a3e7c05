/*
 * bandwidth: the calibration of the bus that the offload crosses: copy
 * bandwidth per size, direction and host memory (mb_bandwidth), as Markdown
 * tables (one per direction, pageable and pinned side by side), CSV rows or
 * JSON objects. The CSV columns and the JSON keys come from one list.
 * Event rates the driver cannot give are n/a (empty, null), and the command
 * then says why and exits 1, after the output.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "commands.h"
#include "mb_bandwidth.h"
#include "mb_err.h"
#include "mb_num.h"
#include "print.h"
#include "setup.h"
#include "version.h"

#define SIZES_MAX 64

/* Everything measured, and where. */
struct bench {
	struct mb_cl cl;
	struct mb_host host;
	char timestamp[32];
	char node[16]; /* the device's NUMA node, "" when unknown */
	uint64_t sizes[SIZES_MAX];
	size_t nsizes;
	struct mb_bw_result *r; /* [pinned][size][direction] */
};

static struct mb_bw_result *at(const struct bench *b, bool pinned, size_t size, int dir)
{
	return &b->r[((size_t)pinned * b->nsizes + size) * MB_BW_NDIRS + (size_t)dir];
}

static int measure(struct bench *b, unsigned reps)
{
	struct mb_bw_buffers *bufs;
	uint64_t largest = 0;
	size_t i;
	int pinned, dir, err = 0;

	for (i = 0; i < b->nsizes; i++)
		largest = b->sizes[i] > largest ? b->sizes[i] : largest;
	for (pinned = 0; pinned <= 1 && !err; pinned++) {
		if ((err = mb_bw_buffers_new(&b->cl, largest, pinned, &bufs)))
			break;
		for (i = 0; i < b->nsizes && !err; i++)
			for (dir = 0; dir < MB_BW_NDIRS && !err; dir++)
				err = mb_bw_measure(bufs, b->sizes[i], dir, reps,
						    at(b, pinned, i, dir));
		mb_bw_buffers_free(bufs);
	}
	return err;
}

/* ---- Markdown ---- */

/* The device's median / the host clock's: well above 1 when the events leave out staging. */
static double events_over_host(const struct mb_bw_result *r)
{
	return r->device_gbs.median / r->host_gbs.median;
}

/* R's five cells under MEMORY's headings into F, their texts in V. */
static void md_cells(const struct mb_bw_result *r, const char *memory, char v[5][32],
		     struct mb_field *f)
{
	bool none = isnan(r->device_gbs.median);

	f[0] = MB_FIELD_TR(memory, r->zero_copy ? "zero-copy"
						: mb_fmt_na(v[0], 32, r->device_gbs.median, 2));
	snprintf(v[1], 32, "%.2f-%.2f", r->device_gbs.min, r->device_gbs.max);
	f[1] = MB_FIELD_TR("min-max", r->zero_copy ? "-" : none ? "n/a" : v[1]);
	f[2] = MB_FIELD_TR("CV", r->zero_copy ? "-" : mb_fmt_na(v[2], 32, r->device_gbs.cv, 3));
	f[3] = MB_FIELD_TR("host clock GB/s",
			   r->zero_copy ? "-" : mb_fmt_na(v[3], 32, r->host_gbs.median, 2));
	f[4] = MB_FIELD_TR("events / host",
			   r->zero_copy ? "-" : mb_fmt_na(v[4], 32, events_over_host(r), 2));
}

static void print_md(const struct bench *b, unsigned reps, size_t untimed)
{
	const struct mb_cl_device_info *d = &b->cl.info;
	char size[32], v[2][5][32], ratio[32], memcpy_gbs[32];
	struct mb_field f[13];
	size_t i;
	int dir;

	printf("# Host-device bandwidth on '%s' (%s, driver %s)\n\n", d->name, d->platform_name,
	       d->driver);
	printf("Host %s (%s): CPUs %s, memory on nodes %s (binding: %s). Device: PCI %s, NUMA "
	       "node %s.\n\n",
	       b->host.name, b->host.cpu_model, b->host.cpus, b->host.mems, b->host.binding,
	       d->pci[0] ? d->pci : "unknown", b->node[0] ? b->node : "unknown");
	printf("%u copies of each size after a warm-up. GB/s: 10^9 bytes a second, the median "
	       "over the copies, timed by the device's events; min-max and CV (standard "
	       "deviation over mean) beside it. Host clock: the same copies timed on the host "
	       "around enqueue and finish, what a caller waits. Events / host: the ratio of the "
	       "two; a pageable one well above the pinned one says that the events leave out "
	       "the driver's staging of pageable memory. Zero-copy: faster than %.0fx the "
	       "host's own memcpy of that size, so no transfer.%s\n",
	       reps, MB_BW_ZERO_COPY_FACTOR,
	       untimed ? " n/a: the driver gave no time for the copies' events (why: on stderr)."
		       : "");
	for (dir = 0; dir < MB_BW_NDIRS; dir++) {
		printf("\n## %s%s\n\n", mb_bw_dir_names[dir],
		       dir == MB_BW_BOTH ? " (H2D and D2H at once, each from a host thread and on "
					   "a queue of its own; the bytes of both counted)"
					 : "");
		for (i = 0; i < b->nsizes; i++) {
			const struct mb_bw_result *pg = at(b, false, i, dir),
						  *pn = at(b, true, i, dir);

			f[0] = MB_FIELD_TR("size",
					   mb_fmt_bytes_iec(size, sizeof(size), b->sizes[i]));
			md_cells(pg, "pageable GB/s", v[0], f + 1);
			md_cells(pn, "pinned GB/s", v[1], f + 6);
			f[11] = MB_FIELD_TR(
				"pinned / pageable",
				pg->zero_copy || pn->zero_copy
					? "-"
					: mb_fmt_na(ratio, sizeof(ratio),
						    pn->device_gbs.median / pg->device_gbs.median,
						    2));
			snprintf(memcpy_gbs, sizeof(memcpy_gbs), "%.2f", pn->memcpy_gbs);
			f[12] = MB_FIELD_TR("host memcpy GB/s", memcpy_gbs);
			mb_printer(MB_FORMAT_MD)->record(f, 13, !i);
		}
	}
}

/* ---- CSV and JSON: one list of fields ---- */

#define NFIELDS 31

static size_t fields(const struct bench *b, const struct mb_bw_result *r, struct mb_field *f)
{
	const struct mb_cl_device_info *d = &b->cl.info;
	double no = NAN;
	size_t n = 0;

#define T(k, v)	 f[n++] = MB_FIELD_T(k, v)
#define U(k, v)	 f[n++] = MB_FIELD_N(k, v)
#define G(k, v)	 f[n++] = MB_FIELD_R(k, v)
#define GZ(k, v) G(k, r->zero_copy ? no : (v))
	U("bandwidth_format_version", 2);
	T("timestamp_utc", b->timestamp);
	T("version", MB_VERSION);
	T("git_rev", MB_GIT_REV);
	T("host", b->host.name);
	T("cpu_model", b->host.cpu_model);
	T("cpus", b->host.cpus);
	T("mems", b->host.mems);
	T("binding", b->host.binding);
	T("platform", d->platform_name);
	T("device", d->name);
	T("driver", d->driver);
	T("device_pci", d->pci);
	T("device_numa_node", b->node);
	U("size_bytes", r->bytes);
	T("direction", mb_bw_dir_names[r->dir]);
	T("memory", r->pinned ? "pinned" : "pageable");
	U("reps", r->reps);
	GZ("device_gbs_median", r->device_gbs.median);
	GZ("device_gbs_min", r->device_gbs.min);
	GZ("device_gbs_max", r->device_gbs.max);
	GZ("device_gbs_cv", r->device_gbs.cv);
	GZ("host_gbs_median", r->host_gbs.median);
	GZ("host_gbs_min", r->host_gbs.min);
	GZ("host_gbs_max", r->host_gbs.max);
	GZ("host_gbs_cv", r->host_gbs.cv);
	G("memcpy_gbs", r->memcpy_gbs);
	T("zero_copy", r->zero_copy ? "yes" : "no");
	/* version 2: "both" from two threads; the three below */
	U("host_threads", r->threads);
	GZ("device_over_host", events_over_host(r));
	T("device_time_error", r->device_error);
#undef T
#undef U
#undef G
#undef GZ
	return n;
}

static void print_rows(const struct bench *b, enum mb_format format)
{
	const struct mb_printer *pr = mb_printer(format);
	struct mb_field f[NFIELDS];
	size_t i, n;
	bool first = true;
	int pinned, dir;

	for (dir = 0; dir < MB_BW_NDIRS; dir++)
		for (pinned = 0; pinned <= 1; pinned++)
			for (i = 0; i < b->nsizes; i++) {
				n = fields(b, at(b, pinned, i, dir), f);
				pr->record(f, n, first);
				first = false;
			}
	pr->end(!first);
}

/* How many results have no device time; *first: the first one's reason. */
static size_t count_untimed(const struct bench *b, const char **first)
{
	size_t i, n = 0;

	for (i = 0; i < 2 * b->nsizes * MB_BW_NDIRS; i++)
		if (b->r[i].device_error[0] && !n++)
			*first = b->r[i].device_error;
	return n;
}

int mb_cmd_bandwidth(const struct mb_args *args)
{
	struct bench b = { 0 };
	struct mb_cl_select sel;
	time_t now = time(NULL);
	const char *first = NULL;
	size_t i, untimed;
	int err;

	if ((err = mb_parse_size_list("--sizes", args->sizes, 1, UINT64_MAX, b.sizes, SIZES_MAX,
				      &b.nsizes)) ||
	    (err = mb_setup_binding(args, &b.host)))
		return err;
	strftime(b.timestamp, sizeof(b.timestamp), "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
	mb_setup_device_select(args, &sel);
	if ((err = mb_cl_open(&b.cl, &sel)))
		return err;
	if (b.cl.info.numa_node >= 0)
		snprintf(b.node, sizeof(b.node), "%d", b.cl.info.numa_node);
	for (i = 0; i < b.nsizes && !err; i++)
		if (b.sizes[i] > b.cl.info.max_alloc_bytes)
			err = mb_bad_input(
				"--sizes: %llu bytes is more than '%s' allocates at once "
				"(%llu bytes)",
				(unsigned long long)b.sizes[i], b.cl.info.name,
				(unsigned long long)b.cl.info.max_alloc_bytes);
	if (!err && !(b.r = calloc(2 * b.nsizes * MB_BW_NDIRS, sizeof(*b.r))))
		err = mb_fail("out of host memory");
	if (!err)
		err = measure(&b, (unsigned)args->reps);
	if (!err) {
		untimed = count_untimed(&b, &first);
		if (args->format == MB_FORMAT_MD)
			print_md(&b, (unsigned)args->reps, untimed);
		else
			print_rows(&b, args->format);
		if (untimed)
			err = mb_fail("no event time for %zu of %zu measurements (their event "
				      "GB/s are n/a; the host clock's stand): %s",
				      untimed, 2 * b.nsizes * MB_BW_NDIRS, first);
	}
	free(b.r);
	mb_cl_release(&b.cl);
	return err;
}

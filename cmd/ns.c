/*
 * ns: Newton-Schulz on the device, per shape, method (both, side by side,
 * unless --ns-method names one) and precision (--ns-precision's list), next
 * to its own GEMM calls (mb_nsbench), as a Markdown table; with --verify,
 * against float64 within the precision's tolerance (mb_ns_tolerance); with
 * --peer, beside a framework's own times (mb_peer).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "mb_err.h"
#include "mb_nsbench.h"
#include "mb_num.h"
#include "mb_peer.h"
#include "print.h"
#include "setup.h"

#define SHAPES_MAX 32
/* 2: ns_method and ns_flops; 3: ns_precision and ns_kernel; 4: peer_median_s and vs_peer */
#define NS_FORMAT_VERSION 4

/* The peer's seconds for R's shape and method at NS's precision (NaN: none, or no peer). */
static double peer_seconds(const struct mb_peer *peer, const struct mb_ns *ns,
			   const struct mb_nsbench_result *r)
{
	return peer ? mb_peer_ns_seconds(peer, r->rows, r->cols, r->method, ns->precision) : NAN;
}

static void print_header(const struct mb_ns *ns, const struct mb_host *host,
			 const struct mb_nsbench_settings *s)
{
	const struct mb_cl *cl = ns->cl;
	char tuning[MB_SETUP_TUNING_SAID_LEN];

	printf("# Newton-Schulz on '%s' (%s, driver %s)\n\n", cl->info.name, cl->info.platform_name,
	       cl->info.driver);
	printf("Host %s (%s): CPUs %s, memory on nodes %s (binding: %s). %s.\n", host->name,
	       host->cpu_model, host->cpus, host->mems, host->binding,
	       mb_setup_tuning_said(cl, tuning, sizeof(tuning)));
	printf("%u timed runs of %u matrix(es) per shape and method after a warm-up; medians "
	       "with min-max of the device's time, from a run's first command's start to its last "
	       "one's end (profiling events).\n",
	       s->reps, s->batch);
	printf("FLOP per m x n matrix (m <= n), 2mnk per GEMM: standard 5 (4m²n + 2m³); gram "
	       "8m²n + 28m³ where m < n (on a square matrix it runs the standard iteration).\n");
	if (ns->gemm16.kernel[0])
		printf("bf16 and fp16 GEMMs: kernels/ns_gemm.cl, %s.\n", ns->gemm16.why);
	printf("\n");
}

/*
 * A shape's figures under one method as a row of the table, FIRST its
 * first; with a PEER, its rate and ours over it.
 */
static void print_md_row(const struct mb_ns *ns, const struct mb_peer *peer,
			 const struct mb_nsbench_result *r, bool first)
{
	char err[32] = "not checked", shape[48], flops[32], v[9][32], range[72];
	double peer_s = peer_seconds(peer, ns, r);

	if (!isnan(r->rel_err))
		snprintf(err, sizeof(err), "%.2e", r->rel_err);
	snprintf(shape, sizeof(shape), "%llux%llu", (unsigned long long)r->rows,
		 (unsigned long long)r->cols);
	snprintf(range, sizeof(range), "%s-%s", mb_fmt_na(v[1], 32, 1e3 * r->ns_s.min, 2),
		 mb_fmt_na(v[2], 32, 1e3 * r->ns_s.max, 2));
	struct mb_field f[] = {
		MB_FIELD_T("shape", shape),
		MB_FIELD_T("method", mb_ns_method_names[r->method]),
		MB_FIELD_TR("FLOP per matrix", mb_fmt_count(flops, sizeof(flops), r->flops)),
		MB_FIELD_TR("NS (ms)", mb_fmt_na(v[0], 32, 1e3 * r->ns_s.median, 2)),
		MB_FIELD_TR("NS min-max (ms)", range),
		MB_FIELD_TR("NS GFLOP/s", mb_fmt_na(v[3], 32, r->gflops, 1)),
		MB_FIELD_TR("GEMMs alone (ms)", mb_fmt_na(v[4], 32, 1e3 * r->gemm_s.median, 2)),
		MB_FIELD_TR("GEMMs GFLOP/s",
			    mb_fmt_na(v[5], 32, r->gflops * r->ns_s.median / r->gemm_s.median, 1)),
		MB_FIELD_TR("NS / GEMMs",
			    mb_fmt_na(v[6], 32, r->ns_s.median / r->gemm_s.median, 3)),
		MB_FIELD_TR("rel. error vs float64", err),
		MB_FIELD_T("precision", mb_precision_names[ns->precision]),
		MB_FIELD_T("GEMM kernel", mb_ns_kernel_name(ns)),
		MB_FIELD_TR("peer GFLOP/s",
			    mb_fmt_na(v[7], 32, (double)r->flops / peer_s / 1e9, 1)),
		MB_FIELD_TR("ours / peer", mb_fmt_na(v[8], 32, peer_s / r->ns_s.median, 3)),
	};

	/* the peer's columns only where there is a peer */
	mb_printer(MB_FORMAT_MD)->record(f, sizeof(f) / sizeof(f[0]) - (peer ? 0 : 2), first);
	fflush(stdout);
}

#define NFIELDS 24

/* A shape's figures under one method as one record (ns --format csv or json). */
static void print_record(const struct mb_ns *ns, const struct mb_peer *peer,
			 const struct mb_nsbench_settings *s, const struct mb_nsbench_result *r,
			 enum mb_format format, bool first)
{
	double peer_s = peer_seconds(peer, ns, r);
	const struct mb_cl *cl = ns->cl;
	struct mb_field f[NFIELDS];
	size_t n = 0;

#define T(k, v) f[n++] = MB_FIELD_T(k, v)
#define U(k, v) f[n++] = MB_FIELD_N(k, v)
#define F(k, v) f[n++] = MB_FIELD_F(k, v)
	U("ns_format_version", NS_FORMAT_VERSION);
	T("platform", cl->info.platform_name);
	T("device", cl->info.name);
	T("driver", cl->info.driver);
	T("tuning", cl->tuning);
	T("tuning_match", cl->tuning_match);
	U("rows", r->rows);
	U("cols", r->cols);
	T("ns_method", mb_ns_method_names[r->method]);
	U("ns_flops", r->flops);
	U("batch", s->batch);
	U("reps", s->reps);
	F("ns_median_s", r->ns_s.median);
	F("ns_min_s", r->ns_s.min);
	F("ns_max_s", r->ns_s.max);
	F("ns_gflops", r->gflops);
	F("gemm_median_s", r->gemm_s.median);
	F("gemm_gflops", r->gflops * r->ns_s.median / r->gemm_s.median);
	F("ns_over_gemm", r->ns_s.median / r->gemm_s.median);
	F("rel_err", r->rel_err);
	T("ns_precision", mb_precision_names[ns->precision]);
	T("ns_kernel", mb_ns_kernel_name(ns));
	F("peer_median_s", peer_s);
	F("vs_peer", peer_s / r->ns_s.median); /* our rate over the peer's */
#undef T
#undef U
#undef F
	_Static_assert(NFIELDS == 24, "one slot a field");
	mb_printer(format)->record(f, n, first);
	fflush(stdout);
}

/* What a bench of one shape, method and precision found wrong, into FAILED unless it holds
 * something. */
static void check_result(const struct mb_nsbench_settings *s, enum mb_precision precision,
			 const struct mb_nsbench_result *r, char *failed, size_t len,
			 size_t *untimed)
{
	const char *method = mb_ns_method_names[r->method];
	double tolerance = mb_ns_tolerance(precision);

	if (s->verify && !(r->rel_err <= tolerance) && !failed[0])
		snprintf(failed, len,
			 "--verify: %s in %s on %llux%llu is off by %.2e (relative Frobenius "
			 "error), above %.0e",
			 method, mb_precision_names[precision], (unsigned long long)r->rows,
			 (unsigned long long)r->cols, r->rel_err, tolerance);
	if (r->no_time[0] && !(*untimed)++ && !failed[0])
		snprintf(failed, len, "%s on %llux%llu: no device time, its figures are n/a: %s",
			 method, (unsigned long long)r->rows, (unsigned long long)r->cols,
			 r->no_time);
}

/* The precisions asked for: each of PRECISIONS, with auto resolved for METHOD on CL's device. */
static enum mb_precision resolve(int precision, enum mb_ns_method method, const struct mb_cl *cl)
{
	return precision != MB_SETUP_PRECISION_AUTO ? (enum mb_precision)precision
						    : mb_ns_precision_auto(&cl->info, method);
}

/*
 * Each shape under each of the NMETHODS METHODS, each of the NPREC
 * PRECISIONS, in that order; a row each.
 */
/* Whether one of the first P of PRECISIONS resolves to PRECISION for METHOD on CL's device. */
static bool timed_before(const int *precisions, size_t p, enum mb_precision precision,
			 enum mb_ns_method method, const struct mb_cl *cl)
{
	size_t q;

	for (q = 0; q < p; q++)
		if (resolve(precisions[q], method, cl) == precision)
			return true;
	return false;
}

static int bench_all(struct mb_ns *ns, const struct mb_peer *peer,
		     const struct mb_nsbench_settings *s, const struct mb_shape *shapes, size_t n,
		     const enum mb_ns_method *methods, size_t nmethods, const int *precisions,
		     size_t nprec, enum mb_format format)
{
	bool md = format == MB_FORMAT_MD;
	struct mb_nsbench_result r;
	char failed[1280] = ""; /* the first failure: later rows record errors too */
	size_t i, k, p, rows = 0, untimed = 0;
	int err = 0;

	for (i = 0; i < n && !err; i++) {
		for (k = 0; k < nmethods && !err; k++) {
			for (p = 0; p < nprec && !err; p++) {
				ns->method = methods[k];
				ns->precision = resolve(precisions[p], methods[k], ns->cl);
				if (timed_before(precisions, p, ns->precision, methods[k], ns->cl))
					continue; /* auto,fp32 on a device where auto is fp32 */
				/* the same stream for each method: the same matrices */
				if ((err = mb_nsbench_run(ns, s, shapes[i].rows, shapes[i].cols,
							  (unsigned)i, &r)))
					break;
				if (md)
					print_md_row(ns, peer, &r, !rows);
				else
					print_record(ns, peer, s, &r, format, !rows);
				rows++;
				check_result(s, ns->precision, &r, failed, sizeof(failed),
					     &untimed);
			}
		}
	}
	mb_printer(format)->end(rows > 0);
	if (err)
		return err;
	if (untimed > 1)
		fprintf(stderr, "muonbench: ns: %zu of %zu rows have no device time\n", untimed,
			rows);
	return failed[0] ? mb_fail("%s", failed) : 0;
}

/* The methods to time: the one --ns-method names, else all, in the order of their enum. */
static size_t methods_of(const struct mb_args *args, enum mb_ns_method *methods)
{
	size_t n = 0;
	int k;

	if (mb_args_given(args, "ns-method")) {
		methods[0] = mb_args_ns_method(args);
		return 1;
	}
	for (k = 0; k < MB_NS_NMETHODS; k++)
		methods[n++] = (enum mb_ns_method)k;
	return n;
}

int mb_cmd_ns(const struct mb_args *args)
{
	struct mb_nsbench_settings s = { .batch = (unsigned)args->batch,
					 .reps = (unsigned)args->reps,
					 .verify = args->verify,
					 .seed = args->seed };
	uint64_t rows[SHAPES_MAX], cols[SHAPES_MAX];
	enum mb_ns_method methods[MB_NS_NMETHODS];
	int precisions[MB_NPRECISIONS + 1];
	struct mb_shape shapes[SHAPES_MAX];
	static struct mb_peer peer;
	struct mb_host host;
	struct mb_ledger ledger;
	struct mb_ns ns;
	struct mb_cl cl;
	size_t n, i, p, nprec, nmethods = methods_of(args, methods);
	int err;

	if ((err = mb_setup_precisions(args, precisions, &nprec)) ||
	    (args->peer && (err = mb_peer_load(args->peer, &peer))))
		return err;
	if ((err = mb_parse_shapes("--shape", args->shapes ? args->shapes : MB_NS_DEFAULT_SHAPES,
				   shapes, SHAPES_MAX, &n)))
		return err;
	for (i = 0; i < n; i++) {
		rows[i] = shapes[i].rows;
		cols[i] = shapes[i].cols;
	}
	if ((err = mb_setup_binding(args, &host)))
		return err;
	if ((err = mb_setup_device(args, &cl)))
		return err;
	mb_ledger_init(&ledger, &cl, args->device_mem_limit);
	err = mb_ns_init(&ns, &cl, &ledger);
	/* one workspace, reserved for every method and precision timed */
	for (i = 0; i < nmethods && !err; i++) {
		for (p = 0; p < nprec && !err; p++) {
			ns.method = methods[i];
			ns.precision = resolve(precisions[p], methods[i], &cl);
			err = mb_ns_reserve(&ns, rows, cols, n);
		}
	}
	if (!err) {
		if (args->format == MB_FORMAT_MD)
			print_header(&ns, &host, &s);
		else if (ns.gemm16.kernel[0])
			fprintf(stderr, "muonbench: ns: bf16 and fp16 GEMMs: %s\n", ns.gemm16.why);
		err = bench_all(&ns, args->peer ? &peer : NULL, &s, shapes, n, methods, nmethods,
				precisions, nprec, args->format);
	}
	mb_ns_release(&ns);
	mb_ledger_release(&ledger);
	mb_cl_release(&cl);
	return err;
}

/*
 * mb_gemm16: kernels/ns_gemm.cl built per path, the choice of path for a
 * device (with the mma path checked against the portable one), and the
 * enqueue.
 */
#include "mb_gemm16.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mb_embedded.h"
#include "mb_err.h"

#define SOURCE	  "kernels/ns_gemm.cl"
#define NSG_BF16  1u /* the kernel's precision argument */
#define NSG_FP16  2u
#define NSG_VEC_A 1u /* and its vec argument: A's rows start 16-byte aligned */
#define NSG_VEC_B 2u /* op(B)'s */

/* The kernel's tiling of each path, as it builds without -D (ns_gemm.cl) */
static const struct mb_gemm16_tile path_tile[MB_GEMM16_NPATHS] = {
	[MB_GEMM16_PORTABLE] = { 64, 64, 16, 128, 0 },
	[MB_GEMM16_MMA] = { 128, 128, 32, 256, 4 },
	[MB_GEMM16_MMA_EMUL] = { 128, 128, 32, 256, 4 },
};

/* Static local memory a work-group may take (NVIDIA's OpenCL: 48 KiB). */
#define LOCAL_MAX (48u << 10)

int mb_gemm16_tile_parse(const char *text, struct mb_gemm16_tile *t)
{
	unsigned warps, warps_m;
	int end = 0;

	/* digits, x and / alone (sscanf's %u would take a sign or spaces), each at most 4096 */
	if (strspn(text, "0123456789x/") != strlen(text) ||
	    sscanf(text, "%ux%ux%u/%u/%u%n", &t->bm, &t->bn, &t->bk, &t->threads, &t->warps_n,
		   &end) != 5 ||
	    text[end] || !isdigit((unsigned char)text[0]) || t->bm > 4096 || t->bn > 4096 ||
	    t->bk > 4096 || t->threads > 4096 || t->warps_n > 4096)
		return mb_bad_input("ns_gemm tile '%s': expected BMxBNxBK/THREADS/WARPS_N "
				    "(128x128x32/256/4), each at most 4096",
				    text);
	warps = t->threads / 32;
	warps_m = t->warps_n ? warps / t->warps_n : 0;
	if (t->bk != 16 && t->bk != 32 && t->bk != 64)
		return mb_bad_input("ns_gemm tile '%s': BK must be 16, 32 or 64", text);
	if (t->threads % 32 || t->threads < 32 || t->threads > 1024 || !t->warps_n ||
	    warps % t->warps_n)
		return mb_bad_input("ns_gemm tile '%s': THREADS must be 32 to 1024 work-items, "
				    "whole warps that WARPS_N divides",
				    text);
	if (!t->bm || !t->bn || t->bm % (warps_m * 16) || t->bn % (t->warps_n * 16))
		return mb_bad_input("ns_gemm tile '%s': a warp's tile (%u x %u) must be whole "
				    "16 x 16s",
				    text, warps_m ? t->bm / warps_m : 0, t->bn / t->warps_n);
	if ((t->bm * t->bk / 8) % t->threads || (t->bn * t->bk / 8) % t->threads)
		return mb_bad_input("ns_gemm tile '%s': %u work-items cannot each load whole "
				    "groups of 8 of the %ux%u and %ux%u tiles",
				    text, t->threads, t->bm, t->bk, t->bn, t->bk);
	if (4ull * (t->bm + t->bn) * t->bk > LOCAL_MAX)
		return mb_bad_input("ns_gemm tile '%s': its local tiles take %llu bytes, past "
				    "%u",
				    text, 4ull * (t->bm + t->bn) * t->bk, LOCAL_MAX);
	return 0;
}

const char *const mb_gemm16_path_names[MB_GEMM16_NPATHS] = { MB_GEMM16_PATHS(MB_NAME_, ) };

static const char *const path_options[MB_GEMM16_NPATHS] = {
	[MB_GEMM16_PORTABLE] = "",
	[MB_GEMM16_MMA] = "-D NSG_MMA=1",
	[MB_GEMM16_MMA_EMUL] = "-D NSG_MMA_EMUL=1",
};

bool mb_gemm16_mma_capable(const struct mb_cl_device_info *info)
{
	char *end;
	unsigned long sm;

	if (!strstr(info->vendor, "NVIDIA") && !strstr(info->platform_name, "NVIDIA"))
		return false;
	if (strncmp(info->arch, "sm_", 3))
		return false;
	sm = strtoul(info->arch + 3, &end, 10);
	return end != info->arch + 3 && !*end && sm >= 80;
}

/* The build log of G's program on its device, into a new string (NULL if none). */
static char *build_log(const struct mb_gemm16 *g)
{
	size_t len = 0;
	char *log;

	if (clGetProgramBuildInfo(g->program, g->cl->device, CL_PROGRAM_BUILD_LOG, 0, NULL, &len))
		return NULL;
	log = calloc(len + 1, 1);
	if (log && clGetProgramBuildInfo(g->program, g->cl->device, CL_PROGRAM_BUILD_LOG, len, log,
					 NULL)) {
		free(log);
		return NULL;
	}
	return log;
}

/* Kernel NAME of G's program into *K, with its work-group size (DIMS of them) into LOCAL. */
static int kernel(struct mb_gemm16 *g, const char *name, cl_kernel *k, cl_uint dims, size_t *local)
{
	cl_int st;
	int err;

	*k = clCreateKernel(g->program, name, &st);
	if ((err = mb_cl_check(g->cl, st, "clCreateKernel", "%s, %s path", name,
			       mb_gemm16_path_names[g->path])))
		return err;
	return mb_cl_local_size(g->cl, *k, name, dims, local);
}

int mb_gemm16_init(struct mb_gemm16 *g, const struct mb_cl *cl, enum mb_gemm16_path path,
		   unsigned flags, const struct mb_gemm16_tile *tile)
{
	const struct mb_embedded_file *f = mb_embedded_find(SOURCE);
	const char *name = mb_gemm16_path_names[path];
	char options[384], tiling[128], *log;
	const struct mb_gemm16_tile *t;
	const char *src;
	size_t wg = 0;
	cl_int st;
	int err;

	memset(g, 0, sizeof(*g));
	g->cl = cl;
	g->path = path;
	g->flags = flags;
	g->tile = path == MB_GEMM16_PORTABLE || !tile ? path_tile[path] : *tile;
	t = &g->tile;
	if (!f)
		return mb_fail("%s is not in this binary", SOURCE);
	/* the mma paths' tile (the portable path's is fixed in the kernel) */
	tiling[0] = '\0';
	if (path != MB_GEMM16_PORTABLE)
		snprintf(
			tiling, sizeof(tiling),
			" -D NSG_BM=%u -D NSG_BN=%u -D NSG_BK=%u -D NSG_THREADS=%u -D NSG_WARPS_N=%u",
			t->bm, t->bn, t->bk, t->threads, t->warps_n);
	snprintf(options, sizeof(options), "%s%s%s%s%s", path_options[path],
		 flags & MB_GEMM16_NO_LDMATRIX ? " -D NSG_NO_LDMATRIX=1" : "", tiling,
		 cl->info.unrestricted_size ? " " : "",
		 cl->info.unrestricted_size ? MB_CL_INTEL_STATELESS : "");
	src = f->data;
	g->program = clCreateProgramWithSource(cl->context, 1, &src, &f->size, &st);
	if ((err = mb_cl_check(cl, st, "clCreateProgramWithSource", "%s, %s path", SOURCE, name)))
		goto out_release;
	st = clBuildProgram(g->program, 1, &cl->device, options, NULL, NULL);
	if (st != CL_SUCCESS) {
		log = build_log(g);
		err = mb_fail(
			"clBuildProgram failed on '%s' (%s, %s path, '%s'): %s; build log:\n%s",
			cl->info.name, SOURCE, name, options, mb_cl_strerror(st),
			log ? log : "(none)");
		free(log);
		goto out_release;
	}
	g->kernel = clCreateKernel(g->program, "ns_gemm", &st);
	if ((err = mb_cl_check(cl, st, "clCreateKernel", "ns_gemm, %s path", name)) ||
	    (err = kernel(g, "ns16_load", &g->load, 2, g->load_local)) ||
	    (err = kernel(g, "ns16_store", &g->store, 2, g->store_local)) ||
	    (err = kernel(g, "ns16_add_diagonal", &g->diagonal, 1, &g->diagonal_local)))
		goto out_release;
	st = clGetKernelWorkGroupInfo(g->kernel, cl->device, CL_KERNEL_WORK_GROUP_SIZE, sizeof(wg),
				      &wg, NULL);
	if ((err = mb_cl_check(cl, st, "clGetKernelWorkGroupInfo", "ns_gemm, %s path", name)))
		goto out_release;
	if (wg < t->threads) {
		err = mb_fail("ns_gemm (%s path) on '%s': work-groups of %zu work-items at most, "
			      "it needs %u",
			      name, cl->info.name, wg, t->threads);
		goto out_release;
	}
	return 0;

out_release:
	mb_gemm16_release(g);
	return err;
}

cl_uint mb_gemm16_prec_arg(enum mb_precision prec)
{
	return prec == MB_PREC_FP16 ? NSG_FP16 : NSG_BF16;
}

int mb_gemm16_enqueue(const struct mb_gemm16 *g, cl_command_queue q, enum mb_precision prec,
		      bool b_transposed, uint64_t m, uint64_t n, uint64_t k, float alpha, cl_mem a,
		      uint64_t a_off, cl_mem b, uint64_t b_off, float beta, cl_mem c,
		      uint64_t c_in_off, uint64_t c_off, cl_event *ev)
{
	const uint64_t bm = g->tile.bm, bn = g->tile.bn, threads = g->tile.threads;
	cl_ulong cm = m, cn = n, ck = k, ao = a_off, bo = b_off, cio = c_in_off, co = c_off;
	cl_uint bt = b_transposed, p = mb_gemm16_prec_arg(prec);
	/* 16-byte loads where every row starts 16-byte aligned (the buffers' bases are) */
	cl_uint vec = (a_off % 8 == 0 && k % 8 == 0 ? NSG_VEC_A : 0) |
		      (b_off % 8 == 0 && (b_transposed ? k : n) % 8 == 0 ? NSG_VEC_B : 0);
	size_t global[2], local[2] = { (size_t)threads, 1 };
	const void *values[] = { &cm, &cn,   &ck, &alpha, &a,  &ao, &b,	 &bo,
				 &bt, &beta, &c,  &cio,	  &co, &p,  &vec };
	const size_t sizes[] = { sizeof(cm), sizeof(cn),  sizeof(ck), sizeof(alpha), sizeof(a),
				 sizeof(ao), sizeof(b),	  sizeof(bo), sizeof(bt),    sizeof(beta),
				 sizeof(c),  sizeof(cio), sizeof(co), sizeof(p),     sizeof(vec) };
	cl_int st = CL_SUCCESS;
	cl_uint i;

	if (ev)
		*ev = NULL;
	if (prec != MB_PREC_BF16 && prec != MB_PREC_FP16)
		return mb_fail("ns_gemm: no %s kernel (bf16 and fp16 only)",
			       prec < MB_NPRECISIONS ? mb_precision_names[prec] : "such");
	if (!m || !n)
		return 0;
	if ((n + bn - 1) / bn > SIZE_MAX / threads)
		return mb_fail("ns_gemm: %llux%llu is too large", (unsigned long long)m,
			       (unsigned long long)n);
	global[0] = (size_t)((n + bn - 1) / bn * threads);
	global[1] = (size_t)((m + bm - 1) / bm);
	for (i = 0; i < sizeof(values) / sizeof(values[0]) && st == CL_SUCCESS; i++)
		st = clSetKernelArg(g->kernel, i, sizes[i], values[i]);
	if (mb_cl_check(g->cl, st, "clSetKernelArg", "ns_gemm (%s), %llux%llux%llu",
			mb_gemm16_path_names[g->path], (unsigned long long)m, (unsigned long long)n,
			(unsigned long long)k))
		return -MB_EFAIL;
	st = clEnqueueNDRangeKernel(q, g->kernel, 2, NULL, global, local, 0, NULL, ev);
	return mb_cl_check(g->cl, st, "clEnqueueNDRangeKernel", "ns_gemm (%s, %s), %llux%llux%llu",
			   mb_gemm16_path_names[g->path], mb_precision_names[prec],
			   (unsigned long long)m, (unsigned long long)n, (unsigned long long)k);
}

void mb_gemm16_release(struct mb_gemm16 *g)
{
	cl_kernel *k[] = { &g->kernel, &g->load, &g->store, &g->diagonal };
	size_t i;

	for (i = 0; i < sizeof(k) / sizeof(k[0]); i++) {
		if (*k[i])
			clReleaseKernel(*k[i]);
		*k[i] = NULL;
	}
	if (g->program)
		clReleaseProgram(g->program);
	g->program = NULL;
}

/*
 * The check's problems: C (M x N) = 1.5 A (M x K) op(B) - 0.5 C_in, in one
 * buffer at element offsets: odd sizes in one work-group, loaded one by
 * one; and sizes over several work-groups, at offsets and rows that take
 * the 16-byte loads, with C_in apart from C (the fused addition).
 */
static const struct check {
	unsigned m, n, k;
	uint64_t a, b, c_in, c, elems;
} checks[] = {
	{ 100, 70, 130, 0, 13000, 22100, 22100, 29100 },
	{ 136, 264, 72, 8, 9800, 28808, 64712, 100616 },
};

#define CHECK_ELEMS_MAX 100616
#define CHECK_C_MAX	(136 * 264)

/*
 * Run G and REF on problem X at PREC with op(B) transposed or not into GOT
 * and WANT (X's C, as floats), on CL's compute queue; INIT is the buffer's
 * X->elems values, 16-bit in BITS.
 */
static int run_check(const struct mb_gemm16 *g, const struct mb_gemm16 *ref, cl_mem buf,
		     const struct check *x, const float *init, uint16_t *bits,
		     enum mb_precision prec, bool bt, float *got, float *want)
{
	const struct mb_cl *cl = g->cl;
	cl_command_queue q = cl->compute;
	const struct mb_gemm16 *run[2] = { g, ref };
	float *out[2] = { got, want };
	cl_int st;
	size_t j;
	int i, err;

	for (i = 0; i < 2; i++) {
		for (j = 0; j < x->elems; j++)
			bits[j] = mb_ns_bits16(init[j], prec);
		st = clEnqueueWriteBuffer(q, buf, CL_TRUE, 0, x->elems * sizeof(uint16_t), bits, 0,
					  NULL, NULL);
		if ((err = mb_cl_check(cl, st, "clEnqueueWriteBuffer", "ns_gemm's check")) ||
		    (err = mb_gemm16_enqueue(run[i], q, prec, bt, x->m, x->n, x->k, 1.5f, buf, x->a,
					     buf, x->b, -0.5f, buf, x->c_in, x->c, NULL)))
			return err;
		st = clEnqueueReadBuffer(q, buf, CL_TRUE, x->c * sizeof(uint16_t),
					 (size_t)x->m * x->n * sizeof(uint16_t), bits, 0, NULL,
					 NULL);
		if ((err = mb_cl_check(cl, st, "clEnqueueReadBuffer", "ns_gemm's check")))
			return err;
		for (j = 0; j < (size_t)x->m * x->n; j++)
			out[i][j] = mb_ns_value16(bits[j], prec);
	}
	return 0;
}

/*
 * Whether G's results match REF's on the check's problems (both precisions,
 * op(B) both ways): every element within 2^-6 of the largest (a 16-bit
 * rounding either way of a sum in another order; a wrong fragment index is
 * off by the order of the values). WHY says what differed. Errors running
 * it are failures of the check, not of the caller.
 */
static bool matches(const struct mb_gemm16 *g, const struct mb_gemm16 *ref, char *why, size_t len)
{
	const struct mb_cl *cl = g->cl;
	float *init = malloc((CHECK_ELEMS_MAX + 2 * CHECK_C_MAX) * sizeof(float));
	float *got = init + CHECK_ELEMS_MAX, *want = got + CHECK_C_MAX;
	uint16_t *bits = malloc(CHECK_ELEMS_MAX * sizeof(uint16_t));
	uint32_t state = 12345;
	cl_mem buf = NULL;
	bool ok = false;
	size_t i, c;
	cl_int st;
	int p, bt;

	if (!init || !bits) {
		snprintf(why, len, "out of host memory for the check");
		goto out_free;
	}
	for (i = 0; i < CHECK_ELEMS_MAX; i++) {
		state = state * 1664525u + 1013904223u;
		init[i] = (float)((double)(state >> 8) / (double)(1u << 24) * 2.0 - 1.0);
	}
	buf = clCreateBuffer(cl->context, CL_MEM_READ_WRITE, CHECK_ELEMS_MAX * sizeof(uint16_t),
			     NULL, &st);
	if (mb_cl_check(cl, st, "clCreateBuffer", "ns_gemm's check")) {
		snprintf(why, len, "%s", mb_errmsg());
		goto out_free;
	}
	for (c = 0; c < sizeof(checks) / sizeof(checks[0]); c++) {
		const struct check *x = &checks[c];
		const size_t n = (size_t)x->m * x->n;

		for (p = MB_PREC_BF16; p <= MB_PREC_FP16; p++) {
			for (bt = 0; bt < 2; bt++) {
				float big = 0, worst = 0;

				if (run_check(g, ref, buf, x, init, bits, (enum mb_precision)p, bt,
					      got, want)) {
					snprintf(why, len, "%s", mb_errmsg());
					goto out_free;
				}
				for (i = 0; i < n; i++)
					big = fmaxf(big, fabsf(want[i]));
				for (i = 0; i < n; i++) {
					float d = fabsf(got[i] - want[i]);

					if (!(d <= worst)) /* NaN wins */
						worst = d;
				}
				if (!(worst <= big / 64)) {
					snprintf(why, len,
						 "%s, op(B) %s, %ux%ux%u: off by %.3g where values "
						 "reach %.3g",
						 mb_precision_names[p], bt ? "Bᵀ" : "B", x->m, x->n,
						 x->k, worst, big);
					goto out_free;
				}
			}
		}
	}
	ok = true;
out_free:
	if (buf)
		clReleaseMemObject(buf);
	free(init);
	free(bits);
	return ok;
}

int mb_gemm16_open(struct mb_gemm16 *g, const struct mb_cl *cl)
{
	/* ldmatrix first, then the fragments read one by one */
	static const unsigned tries[] = { 0, MB_GEMM16_NO_LDMATRIX };
	const char *env = getenv("MUONBENCH_NS_TILE");
	struct mb_gemm16_tile tile;
	struct mb_gemm16 mma;
	char why[2][(sizeof(g->why) - 64) / 2] = { "", "" }, check[sizeof(why[0]) - 64];
	size_t i;
	int err;

	if ((err = mb_gemm16_init(g, cl, MB_GEMM16_PORTABLE, 0, NULL)))
		return err;
	if (!mb_gemm16_mma_capable(&cl->info)) {
		snprintf(g->why, sizeof(g->why),
			 "portable: no mma path for '%s' (arch '%s'): "
			 "NVIDIA sm_80 and up only",
			 cl->info.name, cl->info.arch);
		return 0;
	}
	if (env && *env && (err = mb_gemm16_tile_parse(env, &tile))) {
		mb_gemm16_release(g);
		mb_err_prefix("MUONBENCH_NS_TILE");
		return err;
	}
	for (i = 0; i < sizeof(tries) / sizeof(tries[0]); i++) {
		if (mb_gemm16_init(&mma, cl, MB_GEMM16_MMA, tries[i], env && *env ? &tile : NULL)) {
			snprintf(why[i], sizeof(why[i]), "failed to build or set up: %.150s",
				 mb_errmsg());
			continue;
		}
		if (!matches(&mma, g, check, sizeof(check))) {
			mb_gemm16_release(&mma);
			/*
			 * a check that faulted the device leaves no device to fall back
			 * on (NVIDIA says a fault as CL_OUT_OF_RESOURCES: ask the queues)
			 */
			if (mb_cl_alive(cl)) {
				mb_gemm16_release(g);
				mb_err_prefix("the mma path's check (%s)",
					      tries[i] ? "fragments read one by one" : "ldmatrix");
				return -MB_EFAIL;
			}
			snprintf(why[i], sizeof(why[i]), "does not match the portable kernel: %s",
				 check);
			continue;
		}
		mb_gemm16_release(g);
		*g = mma;
		snprintf(g->why, sizeof(g->why),
			 "mma: %s, tile %ux%ux%u/%u/%u, %s, matches the portable kernel%s%s%s",
			 cl->info.arch, g->tile.bm, g->tile.bn, g->tile.bk, g->tile.threads,
			 g->tile.warps_n, i ? "fragments read one by one" : "ldmatrix",
			 i ? " (with ldmatrix it " : "", i ? why[0] : "", i ? ")" : "");
		return 0;
	}
	snprintf(g->why, sizeof(g->why), "portable: the mma path %s (with ldmatrix it %s)", why[1],
		 why[0]);
	return 0;
}

/*
 * mb_gemm16: kernels/ns_gemm.cl built per path, the choice of path for a
 * device (with the mma path checked against the portable one), and the
 * enqueue.
 */
#include "mb_gemm16.h"

#include <ctype.h>
#include <errno.h>
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

/*
 * Both paths' last checks of tile T (TEXT): every work-item loads whole
 * groups of 8 of A's and B's tiles, and the two tiles, double-buffered,
 * ELEM bytes a value, fit LOCAL_MAX.
 */
static int loads_and_local(const char *text, const struct mb_gemm16_tile *t, unsigned elem)
{
	const unsigned long long bytes = 2ull * elem * (t->bm + t->bn) * t->bk;

	if ((t->bm * t->bk / 8) % t->threads || (t->bn * t->bk / 8) % t->threads)
		return mb_bad_input("ns_gemm tile '%s': %u work-items cannot each load whole "
				    "groups of 8 of the %ux%u and %ux%u tiles",
				    text, t->threads, t->bm, t->bk, t->bn, t->bk);
	if (bytes > LOCAL_MAX)
		return mb_bad_input("ns_gemm tile '%s': its local tiles take %llu bytes, past %u",
				    text, bytes, LOCAL_MAX);
	return 0;
}

/* A portable tile's checks (warps_n 0): whole groups of 8, whole rows of float4s. */
static int portable_tile_check(const char *text, const struct mb_gemm16_tile *t)
{
	if (t->bk % 8 || !t->bk || t->bk > 64)
		return mb_bad_input("ns_gemm tile '%s': BK must be 8, 16, .. 64", text);
	if (!t->threads || t->threads > 1024 || !t->bm || !t->bn || t->bn % 4 ||
	    t->threads % (t->bn / 4) || (t->bm * t->bn / 4) % t->threads ||
	    t->bm * t->bn / 4 / t->threads > 16)
		return mb_bad_input("ns_gemm tile '%s': each of the 1 to 1024 work-items computes "
				    "1 to 16 whole rows of 4 columns (BN a multiple of 4 that "
				    "divides 4 THREADS, BM BN / 4 a multiple of THREADS)",
				    text);
	return loads_and_local(text, t, sizeof(float)); /* fp32 local tiles */
}

int mb_gemm16_tile_parse(const char *text, struct mb_gemm16_tile *t)
{
	const size_t len = strlen(text);
	const char *at;
	size_t digits;
	unsigned warps, warps_m;
	int end = 0, fields = 0;

	/*
	 * digits, x and / alone (sscanf's %u would take a sign or spaces), each at
	 * most 4096, and on the mma paths "/async" at the end
	 */
	t->warps_n = 0;
	t->async = len > 6 && !strcmp(text + len - 6, "/async");
	for (at = text; *at; at += digits ? digits : 1) /* no field past 4 digits (%u wraps) */
		if ((digits = strspn(at, "0123456789")) > 4)
			return mb_bad_input("ns_gemm tile '%s': each field at most 4096", text);
	if (strspn(text, "0123456789x/") == len - (t->async ? 5 : 0) &&
	    isdigit((unsigned char)text[0]))
		fields = sscanf(text, "%ux%ux%u/%u%n/%u%n", &t->bm, &t->bn, &t->bk, &t->threads,
				&end, &t->warps_n, &end);
	if (t->async && fields == 5 && (size_t)end == len - 6)
		end += 6;
	if ((fields != 4 && fields != 5) || (t->async && fields != 5) || text[end] ||
	    t->bm > 4096 || t->bn > 4096 || t->bk > 4096 || t->threads > 4096 || t->warps_n > 4096)
		return mb_bad_input("ns_gemm tile '%s': expected BMxBNxBK/THREADS/WARPS_N[/async] "
				    "(the mma paths', 128x128x32/256/4; /async: by cp.async) or "
				    "BMxBNxBK/THREADS (the portable path's, 64x64x16/128), each at "
				    "most 4096",
				    text);
	if (fields == 4)
		return portable_tile_check(text, t);
	warps = t->threads / 32;
	warps_m = t->warps_n ? warps / t->warps_n : 0;
	if (t->bk != 16 && t->bk != 32 && t->bk != 64)
		return mb_bad_input("ns_gemm tile '%s': BK must be 16, 32 or 64", text);
	if (t->threads % 32 || t->threads < 32 || t->threads > 1024 || !t->warps_n ||
	    warps % t->warps_n)
		return mb_bad_input("ns_gemm tile '%s': THREADS must be 32 to 1024 work-items, "
				    "whole warps that WARPS_N divides",
				    text);
	if (t->bn != 16 && t->bn != 32 && t->bn % 64)
		return mb_bad_input("ns_gemm tile '%s': BN must be 16, 32 or a multiple of 64 (a "
				    "k x n tile's swizzle)",
				    text);
	if (!t->bm || !t->bn || t->bm % (warps_m * 16) || t->bn % (t->warps_n * 16))
		return mb_bad_input("ns_gemm tile '%s': a warp's tile (%u x %u) must be whole "
				    "16 x 16s",
				    text, warps_m ? t->bm / warps_m : 0, t->bn / t->warps_n);
	return loads_and_local(text, t, sizeof(uint16_t)); /* 16-bit local tiles */
}

void mb_gemm16_tile_text(const struct mb_gemm16_tile *t, char *buf, size_t len)
{
	if (t->warps_n)
		snprintf(buf, len, "%ux%ux%u/%u/%u%s", t->bm, t->bn, t->bk, t->threads, t->warps_n,
			 t->async ? "/async" : "");
	else
		snprintf(buf, len, "%ux%ux%u/%u", t->bm, t->bn, t->bk, t->threads);
}

int mb_gemm16_classes_parse(const char *text, struct mb_gemm16_classes *c)
{
	const char *at = text;
	char entry[64], *colon, *end;
	size_t len;
	int err;

	memset(c, 0, sizeof(*c));
	for (;;) {
		len = strcspn(at, ",");
		if (c->n == MB_GEMM16_CLASSES_MAX || len >= sizeof(entry))
			return mb_bad_input("ns_gemm tiles '%s': %s", text,
					    len >= sizeof(entry) ? "an entry past 63 characters"
								 : "more than 6 classes");
		memcpy(entry, at, len);
		entry[len] = '\0';
		if ((colon = strchr(entry, ':'))) {
			*colon = '\0';
			errno = 0;
			c->outputs[c->n] = strtoull(entry, &end, 10);
			if (!isdigit((unsigned char)entry[0]) || *end || errno ||
			    !c->outputs[c->n] || (c->n && c->outputs[c->n] <= c->outputs[c->n - 1]))
				return mb_bad_input("ns_gemm tiles '%s': '%s' is not a bound past "
						    "the class before it (OUTPUTS:TILE, OUTPUTS "
						    "increasing)",
						    text, entry);
		}
		if ((err = mb_gemm16_tile_parse(colon ? colon + 1 : entry, &c->tile[c->n])))
			return err;
		if (!c->tile[c->n].warps_n != !c->tile[0].warps_n)
			return mb_bad_input("ns_gemm tiles '%s': the mma paths' tiles and the "
					    "portable path's mixed",
					    text);
		c->n++;
		if (!at[len])
			break;
		at += len + 1;
		if (!colon)
			return mb_bad_input("ns_gemm tiles '%s': only the last entry is without a "
					    "bound (OUTPUTS:TILE)",
					    text);
	}
	if (c->outputs[c->n - 1])
		return mb_bad_input("ns_gemm tiles '%s': the last entry has no bound (it holds the "
				    "largest GEMMs)",
				    text);
	return 0;
}

void mb_gemm16_classes_text(const struct mb_gemm16_classes *c, char *buf, size_t len)
{
	size_t i, used = 0;

	if (len)
		buf[0] = '\0';
	for (i = 0; i < c->n && used < len; i++) {
		if (i)
			used += (size_t)snprintf(buf + used, len - used, ",");
		if (c->outputs[i] && used < len)
			used += (size_t)snprintf(buf + used, len - used,
						 "%llu:", (unsigned long long)c->outputs[i]);
		if (used < len)
			mb_gemm16_tile_text(&c->tile[i], buf + used, len - used);
		used = strlen(buf);
	}
}

size_t mb_gemm16_class_of(const struct mb_gemm16_classes *c, uint64_t m, uint64_t n)
{
	size_t i;

	for (i = 0; i + 1 < c->n; i++)
		if (m <= c->outputs[i] / (n ? n : 1)) /* m n <= outputs, with no overflow */
			return i;
	return c->n ? c->n - 1 : 0;
}

/*
 * What tune --ns tries on each path, the default first (mb_gemm16_tune_tiles).
 * The mma path's keep nothing in local memory on sm_80 and sm_90 (ptxas,
 * tests/test_ptx.c); a 64 x 64 warp tile, or k 64 at a time in 128 x 64
 * tiles, only with cp.async: staged through registers, such a tile takes
 * ptxas's 255 registers and spills.
 */
static const char *const mma_tune_tiles[] = {
	"128x128x32/256/4",	  "128x128x16/256/4",	    "64x128x32/128/2",
	"128x64x32/128/2",	  "64x64x32/128/2",	    "64x64x64/128/2",
	"128x128x32/256/4/async", "128x256x32/256/4/async", "256x128x32/256/2/async",
	"64x128x32/128/2/async",  "128x64x32/128/2/async",  "64x64x64/128/2/async",
	"64x128x64/128/2/async",  "128x64x64/128/4/async",
};
static const char *const portable_tune_tiles[] = {
	"64x64x16/128",	  "64x64x32/128", "128x64x16/128", "64x128x16/128",
	"128x128x16/256", "32x64x16/64",  "64x64x8/64",	   "32x32x16/64",
};

const char *const *mb_gemm16_tune_tiles(enum mb_gemm16_path path, size_t *n)
{
	if (path == MB_GEMM16_PORTABLE) {
		*n = sizeof(portable_tune_tiles) / sizeof(portable_tune_tiles[0]);
		return portable_tune_tiles;
	}
	*n = sizeof(mma_tune_tiles) / sizeof(mma_tune_tiles[0]);
	return mma_tune_tiles;
}

static const char *const path_options[MB_GEMM16_NPATHS] = {
	[MB_GEMM16_PORTABLE] = "",
	[MB_GEMM16_MMA] = "-D NSG_MMA=1",
	[MB_GEMM16_MMA_EMUL] = "-D NSG_MMA_EMUL=1",
};

bool mb_gemm16_ptxas_info(const char *log, struct mb_gemm16_ptxas *p)
{
	const char *at = strstr(log, "Compiling entry function 'ns_gemm'"), *next, *x;
	unsigned stores, loads;

	memset(p, 0, sizeof(*p));
	if (!at)
		return false;
	/* ns_gemm's lines end where the next function's begin */
	next = strstr(at + 1, "Compiling entry function");
	/* "    320 bytes stack frame, ..." (ptxas -v), or "ptxas         .     320 bytes stack
	 * frame, ..." (the driver's log): from the number before it */
	if ((x = strstr(at, "bytes stack frame")) && (!next || x < next)) {
		while (x > at && x[-1] == ' ')
			x--;
		while (x > at && x[-1] >= '0' && x[-1] <= '9')
			x--;
		if (sscanf(x, "%u bytes stack frame, %u bytes spill stores, %u bytes spill loads",
			   &p->stack_bytes, &stores, &loads) == 3)
			p->spill_bytes = stores + loads;
	}
	if ((x = strstr(at, "Used ")) && (!next || x < next))
		sscanf(x, "Used %u registers", &p->registers);
	return p->registers > 0;
}

void mb_gemm16_options(enum mb_gemm16_path path, unsigned flags, const struct mb_gemm16_tile *t,
		       char *buf, size_t len)
{
	snprintf(buf, len, "%s%s -D NSG_BM=%u -D NSG_BN=%u -D NSG_BK=%u -D NSG_THREADS=%u",
		 path_options[path], flags & MB_GEMM16_NO_LDMATRIX ? " -D NSG_NO_LDMATRIX=1" : "",
		 t->bm, t->bn, t->bk, t->threads);
	if (t->warps_n)
		snprintf(buf + strlen(buf), len - strlen(buf), " -D NSG_WARPS_N=%u%s", t->warps_n,
			 t->async ? " -D NSG_CP_ASYNC=1" : "");
}

struct mb_gemm16_tile mb_gemm16_default_tile(enum mb_gemm16_path path)
{
	return path_tile[path];
}

const char *const mb_gemm16_path_names[MB_GEMM16_NPATHS] = { MB_GEMM16_PATHS(MB_NAME_, ) };

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

/* The build log of G's PROGRAM on its device, into a new string (NULL if none). */
static char *build_log(const struct mb_gemm16 *g, cl_program program)
{
	size_t len = 0;
	char *log;

	if (clGetProgramBuildInfo(program, g->cl->device, CL_PROGRAM_BUILD_LOG, 0, NULL, &len))
		return NULL;
	log = calloc(len + 1, 1);
	if (log &&
	    clGetProgramBuildInfo(program, g->cl->device, CL_PROGRAM_BUILD_LOG, len, log, NULL)) {
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

	*k = clCreateKernel(g->program[0], name, &st);
	if ((err = mb_cl_check(g->cl, st, "clCreateKernel", "%s, %s path", name,
			       mb_gemm16_path_names[g->path])))
		return err;
	return mb_cl_local_size(g->cl, *k, name, dims, local);
}

/* Build G's class I (its tile) into G's program[I] and kernel[I]. */
static int build(struct mb_gemm16 *g, size_t i, const struct mb_embedded_file *f)
{
	const struct mb_cl *cl = g->cl;
	const struct mb_gemm16_tile *t = &g->classes.tile[i];
	const char *name = mb_gemm16_path_names[g->path], *src = f->data;
	char options[384], tiling[160], *log;
	size_t wg = 0;
	cl_int st;
	int err;

	if (!t->warps_n != (g->path == MB_GEMM16_PORTABLE)) {
		mb_gemm16_tile_text(t, tiling, sizeof(tiling));
		return mb_bad_input("ns_gemm tile %s is not one of the %s path's (%s)", tiling,
				    name,
				    g->path == MB_GEMM16_PORTABLE ? "BMxBNxBK/THREADS"
								  : "BMxBNxBK/THREADS/WARPS_N");
	}
	/* the tile (the kernel's defaults are path_tile's), then the device's options */
	mb_gemm16_options(g->path, g->flags, t, tiling, sizeof(tiling));
	snprintf(options, sizeof(options), "%s%s%s%s", tiling,
		 cl->info.unrestricted_size ? " " : "",
		 cl->info.unrestricted_size ? MB_CL_INTEL_STATELESS : "",
		 g->path == MB_GEMM16_MMA ? " -cl-nv-verbose" : "");
	g->program[i] = clCreateProgramWithSource(cl->context, 1, &src, &f->size, &st);
	if ((err = mb_cl_check(cl, st, "clCreateProgramWithSource", "%s, %s path", SOURCE, name)))
		return err;
	st = clBuildProgram(g->program[i], 1, &cl->device, options, NULL, NULL);
	if (st != CL_SUCCESS) {
		log = build_log(g, g->program[i]);
		err = mb_fail(
			"clBuildProgram failed on '%s' (%s, %s path, '%s'): %s; build log:\n%s",
			cl->info.name, SOURCE, name, options, mb_cl_strerror(st),
			log ? log : "(none)");
		free(log);
		return err;
	}
	/* what ptxas says of ns_gemm, where the log has it (-cl-nv-verbose) */
	if (g->path == MB_GEMM16_MMA && (log = build_log(g, g->program[i]))) {
		mb_gemm16_ptxas_info(log, &g->ptxas[i]);
		free(log);
	}
	g->kernel[i] = clCreateKernel(g->program[i], "ns_gemm", &st);
	if ((err = mb_cl_check(cl, st, "clCreateKernel", "ns_gemm, %s path", name)))
		return err;
	st = clGetKernelWorkGroupInfo(g->kernel[i], cl->device, CL_KERNEL_WORK_GROUP_SIZE,
				      sizeof(wg), &wg, NULL);
	if ((err = mb_cl_check(cl, st, "clGetKernelWorkGroupInfo", "ns_gemm, %s path", name)))
		return err;
	if (wg < t->threads) {
		mb_gemm16_tile_text(t, tiling, sizeof(tiling));
		return mb_fail("ns_gemm (%s path, tile %s) on '%s': work-groups of %zu work-items "
			       "at most, it needs %u",
			       name, tiling, cl->info.name, wg, t->threads);
	}
	return 0;
}

int mb_gemm16_init(struct mb_gemm16 *g, const struct mb_cl *cl, enum mb_gemm16_path path,
		   unsigned flags, const struct mb_gemm16_classes *classes)
{
	const struct mb_embedded_file *f = mb_embedded_find(SOURCE);
	size_t i;
	int err;

	memset(g, 0, sizeof(*g));
	g->cl = cl;
	g->path = path;
	g->flags = flags;
	if (classes && classes->n)
		g->classes = *classes;
	else
		g->classes = (struct mb_gemm16_classes){ .n = 1, .tile = { path_tile[path] } };
	if (!f)
		return mb_fail("%s is not in this binary", SOURCE);
	for (i = 0; i < g->classes.n; i++)
		if ((err = build(g, i, f)))
			goto out_release;
	if ((err = kernel(g, "ns16_load", &g->load, 2, g->load_local)) ||
	    (err = kernel(g, "ns16_store", &g->store, 2, g->store_local)) ||
	    (err = kernel(g, "ns16_add_diagonal", &g->diagonal, 1, &g->diagonal_local)))
		goto out_release;
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
	const size_t cls = mb_gemm16_class_of(&g->classes, m, n);
	const struct mb_gemm16_tile *tile = &g->classes.tile[cls];
	const uint64_t bm = tile->bm, bn = tile->bn, threads = tile->threads;
	cl_kernel kern = g->kernel[cls];
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
		st = clSetKernelArg(kern, i, sizes[i], values[i]);
	if (mb_cl_check(g->cl, st, "clSetKernelArg", "ns_gemm (%s), %llux%llux%llu",
			mb_gemm16_path_names[g->path], (unsigned long long)m, (unsigned long long)n,
			(unsigned long long)k))
		return -MB_EFAIL;
	st = clEnqueueNDRangeKernel(q, kern, 2, NULL, global, local, 0, NULL, ev);
	return mb_cl_check(g->cl, st, "clEnqueueNDRangeKernel", "ns_gemm (%s, %s), %llux%llux%llu",
			   mb_gemm16_path_names[g->path], mb_precision_names[prec],
			   (unsigned long long)m, (unsigned long long)n, (unsigned long long)k);
}

void mb_gemm16_release(struct mb_gemm16 *g)
{
	cl_kernel *k[] = { &g->load, &g->store, &g->diagonal };
	size_t i;

	for (i = 0; i < sizeof(k) / sizeof(k[0]); i++) {
		if (*k[i])
			clReleaseKernel(*k[i]);
		*k[i] = NULL;
	}
	for (i = 0; i < MB_GEMM16_CLASSES_MAX; i++) {
		if (g->kernel[i])
			clReleaseKernel(g->kernel[i]);
		if (g->program[i])
			clReleaseProgram(g->program[i]);
		g->kernel[i] = NULL;
		g->program[i] = NULL;
	}
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
static bool matches_one(const struct mb_gemm16 *g, const struct mb_gemm16 *ref, char *why,
			size_t len)
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

bool mb_gemm16_matches(const struct mb_gemm16 *g, const struct mb_gemm16 *ref, char *why,
		       size_t len)
{
	char tile[32], check[256];
	size_t c;

	for (c = 0; c < g->classes.n; c++) {
		/* class C's kernel alone, for every GEMM (a view: nothing to release) */
		struct mb_gemm16 one = *g;

		one.classes.n = 1;
		one.classes.outputs[0] = 0;
		one.classes.tile[0] = g->classes.tile[c];
		one.kernel[0] = g->kernel[c];
		if (!matches_one(&one, ref, check, sizeof(check))) {
			mb_gemm16_tile_text(&g->classes.tile[c], tile, sizeof(tile));
			snprintf(why, len, "tile %s: %s", tile, check);
			return false;
		}
	}
	return true;
}

bool mb_gemm16_fallback(const struct mb_gemm16_classes *given, unsigned i,
			struct mb_gemm16_classes *out, unsigned *flags)
{
	bool any_async = false;
	size_t c;

	*out = *given;
	*flags = i >= 2 ? MB_GEMM16_NO_LDMATRIX : 0;
	for (c = 0; c < out->n; c++) {
		any_async = any_async || out->tile[c].async;
		if (i > 0)
			out->tile[c].async = 0;
	}
	return i != 1 || any_async; /* without cp.async where none had it: try 0 again */
}

/*
 * G, the portable kernel at its default (the reference), becomes the
 * portable path with GIVEN's tiles (from FROM) where they match it; else it
 * stays, and G->why says why.
 */
static void open_portable_given(struct mb_gemm16 *g, const struct mb_gemm16_classes *given,
				const char *from)
{
	struct mb_gemm16 cand;
	char check[180], tiles[256];
	int err;

	mb_gemm16_classes_text(given, tiles, sizeof(tiles));
	if ((err = mb_gemm16_init(&cand, g->cl, MB_GEMM16_PORTABLE, 0, given)) ||
	    !mb_gemm16_matches(&cand, g, check, sizeof(check))) {
		if (!err)
			mb_gemm16_release(&cand);
		snprintf(g->why, sizeof(g->why), "portable, tile %ux%ux%u/%u: %s tiles %s %.200s",
			 g->classes.tile[0].bm, g->classes.tile[0].bn, g->classes.tile[0].bk,
			 g->classes.tile[0].threads, from,
			 err ? "failed to build:" : "do not match the default:",
			 err ? mb_errmsg() : check);
		return;
	}
	mb_gemm16_release(g);
	*g = cand;
	snprintf(g->why, sizeof(g->why), "portable, tiles %s (%s), match the default", tiles, from);
}

/*
 * The mma path for G's device, GIVEN's tiles (from FROM; none: the
 * default) in mb_gemm16_fallback's tries, the first that builds and matches
 * G (the portable reference) replacing it; else G stays. G->why says which
 * and why. -MB_EFAIL where a check lost the device.
 */
static int open_mma(struct mb_gemm16 *g, const struct mb_gemm16_classes *given, const char *from)
{
	static const char *const names[] = { "ldmatrix", "ldmatrix, no cp.async",
					     "fragments read one by one" };
	const struct mb_cl *cl = g->cl;
	struct mb_gemm16_classes classes;
	struct mb_gemm16 cand;
	char why[3][200] = { "", "", "" }, check[180], tiles[256];
	unsigned i, flags, c;

	for (i = 0; i < 3; i++) {
		if (!mb_gemm16_fallback(given, i, &classes, &flags)) {
			snprintf(why[i], sizeof(why[i]), "%s", why[i - 1]);
			continue;
		}
		if (mb_gemm16_init(&cand, cl, MB_GEMM16_MMA, flags, given->n ? &classes : NULL)) {
			snprintf(why[i], sizeof(why[i]), "failed to build or set up: %.150s",
				 mb_errmsg());
			continue;
		}
		if (!mb_gemm16_matches(&cand, g, check, sizeof(check))) {
			mb_gemm16_release(&cand);
			/*
			 * a check that faulted the device leaves no device to fall back
			 * on (NVIDIA says a fault as CL_OUT_OF_RESOURCES: ask the queues)
			 */
			if (mb_cl_alive(cl)) {
				mb_gemm16_release(g);
				mb_err_prefix("the mma path's check (%s)", names[i]);
				return -MB_EFAIL;
			}
			snprintf(why[i], sizeof(why[i]),
				 "does not match the portable kernel: %.150s", check);
			continue;
		}
		mb_gemm16_release(g);
		*g = cand;
		mb_gemm16_classes_text(&g->classes, tiles, sizeof(tiles));
		snprintf(g->why, sizeof(g->why),
			 "mma: %s, tiles %s (%s), %s, matches the portable kernel", cl->info.arch,
			 tiles, given->n ? from : "the default", names[i]);
		for (c = 0; c < g->classes.n && g->ptxas[c].registers; c++)
			snprintf(g->why + strlen(g->why), sizeof(g->why) - strlen(g->why), "%s%u",
				 c ? "/" : ", registers a work-item (ptxas): ",
				 g->ptxas[c].registers);
		for (c = 0; c < g->classes.n; c++)
			if (g->ptxas[c].stack_bytes || g->ptxas[c].spill_bytes)
				snprintf(g->why + strlen(g->why), sizeof(g->why) - strlen(g->why),
					 ", tile %u keeps %u bytes a work-item in local memory "
					 "(stack frame; spills %u)",
					 c + 1, g->ptxas[c].stack_bytes, g->ptxas[c].spill_bytes);
		if (i > 0 && strcmp(why[0], why[1]))
			snprintf(g->why + strlen(g->why), sizeof(g->why) - strlen(g->why),
				 " (with cp.async it %.100s)", why[0]);
		if (i == 2)
			snprintf(g->why + strlen(g->why), sizeof(g->why) - strlen(g->why),
				 " (with ldmatrix it %.100s)", why[1]);
		return 0;
	}
	snprintf(g->why, sizeof(g->why),
		 "portable: the mma path %.150s (with ldmatrix it %.150s%s%.100s)", why[2], why[1],
		 strcmp(why[0], why[1]) ? "; with cp.async it " : "",
		 strcmp(why[0], why[1]) ? why[0] : "");
	return 0;
}

int mb_gemm16_open(struct mb_gemm16 *g, const struct mb_cl *cl)
{
	const char *env = getenv("MUONBENCH_NS_TILE");
	const char *from = env && *env ? "MUONBENCH_NS_TILE's" : "the tuning's";
	const char *text = env && *env ? env : cl->ns_gemm;
	struct mb_gemm16_classes given = { 0 };
	char tiles[256];
	int err;

	if (*text && (err = mb_gemm16_classes_parse(text, &given))) {
		mb_err_prefix("%s", env && *env ? "MUONBENCH_NS_TILE" : "the tuning");
		return err;
	}
	/* the reference: the portable kernel at its default tile */
	if ((err = mb_gemm16_init(g, cl, MB_GEMM16_PORTABLE, 0, NULL)))
		return err;
	if (given.n && !given.tile[0].warps_n) { /* portable tiles: the portable path with them */
		open_portable_given(g, &given, from);
		return 0;
	}
	if (mb_gemm16_mma_capable(&cl->info))
		return open_mma(g, &given, from);
	mb_gemm16_classes_text(&given, tiles, sizeof(tiles));
	snprintf(g->why, sizeof(g->why),
		 "portable: no mma path for '%.100s' (arch '%.32s'): NVIDIA sm_80 and up only%s%s%s"
		 "%.200s%s",
		 cl->info.name, cl->info.arch, given.n ? " (" : "", given.n ? from : "",
		 given.n ? " mma tiles set aside: " : "", given.n ? tiles : "", given.n ? ")" : "");
	return 0;
}

/*
 * The mma path of kernels/ns_gemm.cl through NVIDIA's own assembler, with
 * no GPU: clang's OpenCL front end and NVPTX back end (libclc's builtins)
 * make PTX of every tile `tune --ns` may store and of each fallback build
 * (mb_gemm16_fallback: without cp.async, without ldmatrix), as
 * mb_gemm16_options builds them, and ptxas assembles it for sm_80 and
 * sm_90. The inline asm (mma.sync, ldmatrix and its .trans, cp.async, the
 * address-space conversions) must assemble, and ns_gemm must keep nothing
 * in local memory (no stack frame, no spills: mb_gemm16_ptxas_info), but
 * in the fallbacks of an /async tile, which may (said). The
 * registers a work-item takes are printed (past 128 a 256-work-item group
 * loses its second group per SM). NVIDIA's OpenCL driver compiles with its
 * own front end, so this is the asm and the shape of the code, not the
 * driver's build; skipped where clang 15 or later, libclc's nvptx64
 * builtins or ptxas (the CUDA toolkit) is missing.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "mb_embedded.h"
#include "mb_gemm16.h"

static const char *const libclc_places[] = { "/usr/lib/clc/nvptx64--nvidiacl.bc",
					     "/usr/share/clc/nvptx64--nvidiacl.bc" };

struct tools {
	char clang[64], libclc[256], ptxas[256], dir[64];
};

/* Whether shell command CMD exits 0 (its output dropped). */
static int runs(const char *cmd)
{
	char buf[1024];

	snprintf(buf, sizeof(buf), "%s >/dev/null 2>&1", cmd);
	return system(buf) == 0;
}

/* The tools into *T, or why not into WHY; the kernel's source in T's directory. */
static int find_tools(struct tools *t, char *why, size_t len)
{
	const struct mb_embedded_file *src = mb_embedded_find("kernels/ns_gemm.cl");
	const char *env = getenv("MB_CLANG");
	char path[128];
	unsigned v;
	size_t i;
	FILE *f;

	t->clang[0] = t->libclc[0] = t->ptxas[0] = '\0';
	for (v = 15; !env && v <= 22 && !t->clang[0]; v++) {
		snprintf(path, sizeof(path), "command -v clang-%u", v);
		if (runs(path))
			snprintf(t->clang, sizeof(t->clang), "clang-%u", v);
	}
	if (env)
		snprintf(t->clang, sizeof(t->clang), "%s", env);
	for (i = 0; i < sizeof(libclc_places) / sizeof(libclc_places[0]); i++)
		if (!t->libclc[0] && !access(libclc_places[i], R_OK))
			snprintf(t->libclc, sizeof(t->libclc), "%s", libclc_places[i]);
	if (runs("command -v ptxas"))
		snprintf(t->ptxas, sizeof(t->ptxas), "ptxas");
	else if (!access("/usr/local/cuda/bin/ptxas", X_OK))
		snprintf(t->ptxas, sizeof(t->ptxas), "/usr/local/cuda/bin/ptxas");
	if (!t->clang[0] || !t->libclc[0] || !t->ptxas[0]) {
		snprintf(why, len,
			 "no %s (the check needs clang 15 or later, libclc-15's "
			 "nvptx64--nvidiacl.bc and the CUDA toolkit's ptxas)",
			 !t->clang[0]	 ? "clang 15 or later"
			 : !t->libclc[0] ? "libclc"
					 : "ptxas");
		return -1;
	}
	snprintf(t->dir, sizeof(t->dir), "/tmp/mb-ptx-XXXXXX");
	assert_non_null(src);
	assert_non_null(mkdtemp(t->dir));
	snprintf(path, sizeof(path), "%s/ns_gemm.cl", t->dir);
	assert_non_null(f = fopen(path, "w"));
	assert_int_equal(fwrite(src->data, 1, src->size, f), src->size);
	assert_int_equal(fclose(f), 0);
	return 0;
}

/* The text of file DIR/NAME into a new string ("" where there is none). */
static char *slurp(const char *dir, const char *name)
{
	char path[128], *text;
	long len;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (!(f = fopen(path, "r")))
		return calloc(1, 1);
	fseek(f, 0, SEEK_END);
	len = ftell(f);
	rewind(f);
	assert_non_null(text = calloc((size_t)len + 1, 1));
	text[fread(text, 1, (size_t)len, f)] = '\0';
	fclose(f);
	return text;
}

struct build {
	const char *tile;
	unsigned flags;	   /* MB_GEMM16_NO_LDMATRIX or 0 */
	bool fallback;	   /* an /async tile without cp.async: it must assemble, and may spill */
	char options[256]; /* mb_gemm16_options's */
};

/* B's options into it; false where a build of BUILT (N of them) has them already. */
static bool new_build(struct build *b, const struct build *built, size_t n)
{
	struct mb_gemm16_tile tile;
	size_t i;

	assert_int_equal(mb_gemm16_tile_parse(b->tile, &tile), 0);
	if (b->fallback)
		tile.async = 0;
	mb_gemm16_options(MB_GEMM16_MMA, b->flags, &tile, b->options, sizeof(b->options));
	for (i = 0; i < n; i++)
		if (!strcmp(built[i].options, b->options))
			return false;
	return true;
}

static const char *const archs[] = { "sm_80", "sm_90" };

/* Build J's line of the jobs: clang makes J.ptx (J.clang its output), ptxas J.ARCH of it. */
static void job(FILE *jobs, const struct tools *t, const struct build *b, size_t j)
{
	size_t a;

	fprintf(jobs,
		"%s -x cl -cl-std=CL1.2 -target nvptx64-nvidia-nvcl -Xclang "
		"-finclude-default-header -Xclang -mlink-builtin-bitcode -Xclang %s "
		"-Wno-linker-warnings -O3 -Dasm=__asm__ -Xclang -target-cpu -Xclang sm_80 %s -S "
		"%s/ns_gemm.cl -o %s/%zu.ptx >%s/%zu.clang 2>&1",
		t->clang, t->libclc, b->options, t->dir, t->dir, j, t->dir, j);
	for (a = 0; a < sizeof(archs) / sizeof(archs[0]); a++)
		fprintf(jobs, " && %s -arch=%s -v %s/%zu.ptx -o /dev/null >%s/%zu.%s 2>&1",
			t->ptxas, archs[a], t->dir, j, t->dir, j, archs[a]);
	fputc('\n', jobs);
}

/*
 * Build J's outcome: clang made PTX, ptxas assembled it for each arch, and
 * ns_gemm keeps nothing in local memory (a fallback's may: said); its
 * registers printed. Returns the failures.
 */
static int outcome(const struct tools *t, const struct build *b, size_t j)
{
	struct mb_gemm16_ptxas p[2];
	char name[32], *out, *clang;
	int failed = 0;
	size_t a;

	for (a = 0; a < sizeof(archs) / sizeof(archs[0]); a++) {
		snprintf(name, sizeof(name), "%zu.%s", j, archs[a]);
		out = slurp(t->dir, name);
		if (!mb_gemm16_ptxas_info(out, &p[a]) ||
		    (!b->fallback && (p[a].stack_bytes || p[a].spill_bytes))) {
			snprintf(name, sizeof(name), "%zu.clang", j);
			clang = slurp(t->dir, name);
			print_error("%s%s on %s: no ns_gemm assembled, or it keeps values in local "
				    "memory (stack frame, spills)\nclang: %s\nptxas: %s\n",
				    b->tile, b->flags ? " without ldmatrix" : "", archs[a], clang,
				    out);
			free(clang);
			failed++;
		}
		free(out);
	}
	if (!failed)
		print_message("# %-24s %-28s registers: sm_80 %3u, sm_90 %3u%s\n", b->tile,
			      b->fallback && b->flags ? "without cp.async or ldmatrix"
			      : b->fallback	      ? "without cp.async"
			      : b->flags	      ? "without ldmatrix"
						      : "",
			      p[0].registers, p[1].registers,
			      p[0].stack_bytes + p[1].stack_bytes + p[0].spill_bytes +
					      p[1].spill_bytes
				      ? " (local memory: a fallback's)"
				      : "");
	return failed;
}

/*
 * Every tile tune --ns may store (mb_gemm16_tune_tiles), as given, and each
 * fallback mb_gemm16_fallback builds of it: a tile without cp.async also
 * without ldmatrix; an /async tile without cp.async, and without either
 * (these must assemble, and may keep values in local memory: a 64 x 64
 * warp tile staged through registers spills); each build once, two at a
 * time.
 */
static void mma_tiles_assemble(void **state)
{
	struct tools t;
	struct build b[80];
	const char *const *tiles;
	char why[256], cmd[256];
	int failed = 0;
	size_t i, n, nb = 0;
	FILE *jobs;

	(void)state;
	if (find_tools(&t, why, sizeof(why))) {
		print_message("# skipped: %s\n", why);
		skip();
	}
	tiles = mb_gemm16_tune_tiles(MB_GEMM16_MMA, &n);
	for (i = 0; i < n; i++) {
		bool async = strstr(tiles[i], "/async") != NULL;

		const struct build each[] = { { tiles[i], 0, false, "" },
					      { tiles[i], 0, true, "" },
					      { tiles[i], MB_GEMM16_NO_LDMATRIX, async, "" } };
		size_t k;

		for (k = 0; k < 3; k++) {
			if (k == 1 && !async)
				continue;
			assert_true(nb < sizeof(b) / sizeof(b[0]));
			b[nb] = each[k];
			nb += new_build(&b[nb], b, nb); /* a fallback that is a tile of the list:
							   once */
		}
	}
	snprintf(cmd, sizeof(cmd), "%s/jobs", t.dir);
	assert_non_null(jobs = fopen(cmd, "w"));
	for (i = 0; i < nb; i++)
		job(jobs, &t, &b[i], i);
	assert_int_equal(fclose(jobs), 0);
	/* a job that fails leaves its outputs for outcome to read */
	snprintf(cmd, sizeof(cmd), "xargs -d '\\n' -n 1 -P 2 sh -c <%s/jobs", t.dir);
	(void)!system(cmd);
	for (i = 0; i < nb; i++)
		failed += outcome(&t, &b[i], i);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", t.dir);
	(void)!system(cmd);
	assert_int_equal(failed, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(mma_tiles_assemble),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

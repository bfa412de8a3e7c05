/*
 * mb_tuning: CLBlast's kernel parameters for one device, kept in a small
 * JSON file keyed by the device (platform, device name, driver version) and
 * applied with CLBlastOverrideParameters before any GEMM (mb_tuning_cl).
 *
 * A tuning file comes from `muonbench tune`, which runs CLBlast's own tuners
 * and reads the JSON they write (mb_tuning_read_tuner). `--tuning auto`
 * falls back as CLBlast's own database does (mb_tuning_find): the tuning
 * of this very device (from the cache, $XDG_CACHE_HOME/muonbench/, else
 * shipped: the .json files of tuning/, compiled in), else a shipped one of
 * the same platform and driver for the same architecture, else one of the
 * same platform and device type (which the caller must verify first: the
 * verdict is cached), else CLBlast's defaults.
 *
 * The file:
 *   { "muonbench_tuning": 1,
 *     "platform": "...", "device": "...", "driver": "...",
 *     "architecture": "haswell", "type": "CPU", (optional: "" when absent)
 *     "tuned_utc": "...", "gemm": "MxNxK it was tuned at",
 *     "kernels": { "Xgemm": { "GEMMK": 0, "KREG": 1, ... }, "GemmRoutine": {...} },
 *     (optional, from `muonbench tune --ns`:)
 *     "ns_gemm": "262144:64x64x32/128/2,128x128x32/256/4",
 *     "ns_gemm_tuned_utc": "...", "ns_gemm_at": "fp16 on 2560x9728, ..." }
 * "kernels" may be empty where only ns_gemm was tuned. The ns_gemm tiles
 * are mb_gemm16's to read (lib/cl/mb_gemm16.h, mb_gemm16_classes).
 */
#ifndef MB_TUNING_H
#define MB_TUNING_H

#include <stdbool.h>
#include <stddef.h>

#include "mb_device.h"

#define MB_TUNING_VERSION     1
#define MB_TUNING_KERNELS_MAX 8
#define MB_TUNING_PARAMS_MAX  24

/* One of CLBlast's kernels ("Xgemm") and every parameter it takes. */
struct mb_tuning_kernel {
	char name[24];
	size_t nparams;
	char param[MB_TUNING_PARAMS_MAX][32];
	size_t value[MB_TUNING_PARAMS_MAX];
};

struct mb_tuning {
	char platform[128], device[128], driver[64]; /* the key */
	char arch[64], type[16];		     /* for the fallbacks */
	char tuned_utc[32], gemm[64];
	size_t nkernels; /* CLBlast's: none where only ns_gemm was tuned */
	struct mb_tuning_kernel kernel[MB_TUNING_KERNELS_MAX];
	/* `muonbench tune --ns`: our 16-bit GEMM's tiles (mb_gemm16_classes); "": none */
	char ns_gemm[256], ns_gemm_tuned_utc[32], ns_gemm_at[256]; /* at: what it was timed on */
};

/* Parse LEN bytes of TEXT (SOURCE names it in errors) into *t. 0 or -MB_EINPUT. */
int mb_tuning_parse(const char *text, size_t len, const char *source, struct mb_tuning *t);

/* The same for the file PATH. */
int mb_tuning_load(const char *path, struct mb_tuning *t);

/* T as the JSON text of a tuning file (the caller frees it); NULL when out of memory. */
char *mb_tuning_format(const struct mb_tuning *t);

/* Write T to PATH whole (through a temporary file), making its directory. */
int mb_tuning_save(const char *path, const struct mb_tuning *t);

/* Whether T was made for device D: the same platform, device name and driver. */
bool mb_tuning_matches(const struct mb_tuning *t, const struct mb_cl_device_info *d);

/* How a tuning was chosen, best first; MB_TUNING_NONE: CLBlast's defaults. */
enum mb_tuning_match {
	MB_TUNING_GIVEN,	/* --tuning FILE */
	MB_TUNING_EXACT,	/* made for this device */
	MB_TUNING_ARCHITECTURE, /* same platform, driver and architecture */
	MB_TUNING_FAMILY,	/* same platform and device type: verify before use */
	MB_TUNING_NONE,
};

/* "given", "exact", "architecture", "family", "none" */
extern const char *const mb_tuning_match_names[];

/* How well T fits device D: exact, architecture, family or none. */
enum mb_tuning_match mb_tuning_match_of(const struct mb_tuning *t,
					const struct mb_cl_device_info *d);

/* Set T's key to device D. */
void mb_tuning_set_key(struct mb_tuning *t, const struct mb_cl_device_info *d);

/* Add or replace K in T. */
void mb_tuning_put(struct mb_tuning *t, const struct mb_tuning_kernel *k);

/*
 * Read a JSON file that one of CLBlast's tuners wrote (clblast_xgemm_1_32.json):
 * the kernel it tuned, as CLBlastOverrideParameters names it, with its best
 * parameters, into *k; the best time in ms and the m, n, k it ran at.
 * Single precision only. 0 or -MB_EINPUT.
 */
int mb_tuning_read_tuner(const char *path, struct mb_tuning_kernel *k, double *best_ms, char *gemm,
			 size_t gemm_len);

/*
 * $XDG_CACHE_HOME/muonbench/PREFIX-KEY.SUFFIX (else ~/.cache/muonbench/):
 * where the cache keeps what belongs to device D (KEY: its platform, name
 * and driver), a tuning or a device profile.
 */
void mb_tuning_cache_file(const struct mb_cl_device_info *d, const char *prefix, const char *suffix,
			  char *buf, size_t len);

/* Make the directories that PATH's file lies in; -MB_EFAIL naming the one that fails. */
int mb_tuning_make_dirs(const char *path);

/* Where the cache keeps device D's tuning: $XDG_CACHE_HOME/muonbench/clblast-KEY.json. */
void mb_tuning_cache_path(const struct mb_cl_device_info *d, char *buf, size_t len);

/*
 * What --tuning auto applies to device D: the cached file if its key
 * matches, else the file that fits best (exact, then architecture, then
 * family) among the cache's files of other devices (clblast-*.json, which a
 * user may copy there) and then the shipped ones (unless the environment
 * has MUONBENCH_SHIPPED_TUNINGS=off); the first found among equals. Returns 1 with
 * *t, its SOURCE (a path, or "shipped tuning/NAME.json") and *MATCH; 0 when
 * none fits (*MATCH is MB_TUNING_NONE); -MB_EINPUT for a cached file that
 * cannot be read. A family match is not yet fit to apply: verify it first.
 */
int mb_tuning_find(const struct mb_cl_device_info *d, struct mb_tuning *t, char *source, size_t len,
		   enum mb_tuning_match *match);

/*
 * The cached verdict of verifying T (from SOURCE) on device D: 1 it passed,
 * 0 it failed, -1 never checked.
 */
int mb_tuning_verdict(const struct mb_cl_device_info *d, const struct mb_tuning *t,
		      const char *source);

/* Cache the verdict PASSED of T (from SOURCE) on device D. 0 or -MB_EFAIL. */
int mb_tuning_record_verdict(const struct mb_cl_device_info *d, const struct mb_tuning *t,
			     const char *source, bool passed);

#endif

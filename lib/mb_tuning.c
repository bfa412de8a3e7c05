/*
 * mb_tuning: CLBlast kernel parameters per device: the file, the cache, and
 * applying them.
 */
#include "mb_tuning.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mb_embedded.h"
#include "mb_err.h"
#include "mb_file.h"
#include "mb_json.h"

const char *const mb_tuning_match_names[] = { "given", "exact", "architecture", "family", "none" };

static int key_string(const cJSON *root, const char *key, char *buf, size_t len, const char *source)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, key);

	if (!cJSON_IsString(v))
		return mb_bad_input("%s: '%s' must be a string", source, key);
	if (strlen(v->valuestring) >= len)
		return mb_bad_input("%s: '%s' is longer than %zu characters", source, key, len - 1);
	snprintf(buf, len, "%s", v->valuestring);
	return 0;
}

/* KEY if ROOT has it, else "". */
static int optional_string(const cJSON *root, const char *key, char *buf, size_t len,
			   const char *source)
{
	buf[0] = '\0';
	if (!cJSON_GetObjectItemCaseSensitive(root, key))
		return 0;
	return key_string(root, key, buf, len, source);
}

static int parse_kernel(const cJSON *obj, const char *source, struct mb_tuning_kernel *k)
{
	const cJSON *p;

	memset(k, 0, sizeof(*k));
	if (strlen(obj->string) >= sizeof(k->name) || !cJSON_IsObject(obj))
		return mb_bad_input("%s: kernel '%s' must be an object of parameters", source,
				    obj->string);
	snprintf(k->name, sizeof(k->name), "%s", obj->string);
	cJSON_ArrayForEach(p, obj) {
		if (k->nparams == MB_TUNING_PARAMS_MAX || strlen(p->string) >= sizeof(k->param[0]))
			return mb_bad_input("%s: kernel '%s' has too many or too long parameters",
					    source, k->name);
		if (!cJSON_IsNumber(p) || p->valuedouble < 0 || p->valuedouble > 1e9 ||
		    p->valuedouble != (double)(size_t)p->valuedouble)
			return mb_bad_input("%s: %s.%s must be a whole number from 0 to 1e9",
					    source, k->name, p->string);
		snprintf(k->param[k->nparams], sizeof(k->param[0]), "%s", p->string);
		k->value[k->nparams++] = (size_t)p->valuedouble;
	}
	if (!k->nparams)
		return mb_bad_input("%s: kernel '%s' has no parameters", source, k->name);
	return 0;
}

int mb_tuning_parse(const char *text, size_t len, const char *source, struct mb_tuning *t)
{
	const cJSON *version, *kernels, *k;
	cJSON *root;
	int err;

	memset(t, 0, sizeof(*t));
	if ((err = mb_json_parse(text, len, source, &root)))
		return err;
	version = cJSON_GetObjectItemCaseSensitive(root, "muonbench_tuning");
	kernels = cJSON_GetObjectItemCaseSensitive(root, "kernels");
	if (!cJSON_IsNumber(version))
		err = mb_bad_input("%s: not a muonbench tuning file (no \"muonbench_tuning\")",
				   source);
	else if (version->valuedouble != MB_TUNING_VERSION)
		err = mb_bad_input("%s: tuning file version %g; this muonbench reads version %d",
				   source, version->valuedouble, MB_TUNING_VERSION);
	else if (!(err = key_string(root, "platform", t->platform, sizeof(t->platform), source)) &&
		 !(err = key_string(root, "device", t->device, sizeof(t->device), source)) &&
		 !(err = key_string(root, "driver", t->driver, sizeof(t->driver), source)) &&
		 !(err = optional_string(root, "architecture", t->arch, sizeof(t->arch), source)) &&
		 !(err = optional_string(root, "type", t->type, sizeof(t->type), source)) &&
		 !(err = key_string(root, "tuned_utc", t->tuned_utc, sizeof(t->tuned_utc),
				    source)) &&
		 !(err = key_string(root, "gemm", t->gemm, sizeof(t->gemm), source)) &&
		 !(err = optional_string(root, "ns_gemm", t->ns_gemm, sizeof(t->ns_gemm),
					 source)) &&
		 !(err = optional_string(root, "ns_gemm_tuned_utc", t->ns_gemm_tuned_utc,
					 sizeof(t->ns_gemm_tuned_utc), source)) &&
		 !(err = optional_string(root, "ns_gemm_at", t->ns_gemm_at, sizeof(t->ns_gemm_at),
					 source))) {
		if (!cJSON_IsObject(kernels) || (!cJSON_GetArraySize(kernels) && !t->ns_gemm[0]))
			err = mb_bad_input("%s: 'kernels' must be an object of CLBlast kernels "
					   "(empty only beside ns_gemm)",
					   source);
		cJSON_ArrayForEach(k, kernels) {
			if (err)
				break;
			if (t->nkernels == MB_TUNING_KERNELS_MAX)
				err = mb_bad_input("%s: more than %d kernels", source,
						   MB_TUNING_KERNELS_MAX);
			else
				err = parse_kernel(k, source, &t->kernel[t->nkernels++]);
		}
	}
	cJSON_Delete(root);
	return err;
}

int mb_tuning_load(const char *path, struct mb_tuning *t)
{
	char *text;
	size_t len;
	int err;

	if ((err = mb_json_read_file(path, "CLBlast tuning", &text, &len)))
		return err;
	err = mb_tuning_parse(text, len, path, t);
	free(text);
	return err;
}

char *mb_tuning_format(const struct mb_tuning *t)
{
	cJSON *root = cJSON_CreateObject(), *kernels, *k;
	char *text = NULL;
	size_t i, j;

	if (!root)
		return NULL;
	cJSON_AddNumberToObject(root, "muonbench_tuning", MB_TUNING_VERSION);
	cJSON_AddStringToObject(root, "platform", t->platform);
	cJSON_AddStringToObject(root, "device", t->device);
	cJSON_AddStringToObject(root, "driver", t->driver);
	cJSON_AddStringToObject(root, "architecture", t->arch);
	cJSON_AddStringToObject(root, "type", t->type);
	cJSON_AddStringToObject(root, "tuned_utc", t->tuned_utc);
	cJSON_AddStringToObject(root, "gemm", t->gemm);
	kernels = cJSON_AddObjectToObject(root, "kernels");
	for (i = 0; kernels && i < t->nkernels; i++) {
		k = cJSON_AddObjectToObject(kernels, t->kernel[i].name);
		for (j = 0; k && j < t->kernel[i].nparams; j++)
			cJSON_AddNumberToObject(k, t->kernel[i].param[j],
						(double)t->kernel[i].value[j]);
	}
	if (t->ns_gemm[0]) {
		cJSON_AddStringToObject(root, "ns_gemm", t->ns_gemm);
		cJSON_AddStringToObject(root, "ns_gemm_tuned_utc", t->ns_gemm_tuned_utc);
		cJSON_AddStringToObject(root, "ns_gemm_at", t->ns_gemm_at);
	}
	text = cJSON_Print(root);
	cJSON_Delete(root);
	return text;
}

int mb_tuning_make_dirs(const char *path)
{
	char dir[4096], *slash;

	snprintf(dir, sizeof(dir), "%s", path);
	for (slash = strchr(dir + 1, '/'); slash; slash = strchr(slash + 1, '/')) {
		*slash = '\0';
		if (mkdir(dir, 0755) && errno != EEXIST)
			return mb_fail("cannot make the directory '%s': %s", dir, strerror(errno));
		*slash = '/';
	}
	return 0;
}

int mb_tuning_save(const char *path, const struct mb_tuning *t)
{
	char *text = mb_tuning_format(t), *line;
	int err;

	if (!text)
		return mb_fail("out of host memory formatting a tuning file");
	line = malloc(strlen(text) + 2);
	if (!line)
		err = mb_fail("out of host memory formatting a tuning file");
	else if (!(err = mb_tuning_make_dirs(path))) {
		sprintf(line, "%s\n", text);
		err = mb_json_write_file(path, line);
	}
	free(line);
	free(text);
	return err;
}

bool mb_tuning_matches(const struct mb_tuning *t, const struct mb_cl_device_info *d)
{
	return mb_tuning_match_of(t, d) == MB_TUNING_EXACT;
}

enum mb_tuning_match mb_tuning_match_of(const struct mb_tuning *t,
					const struct mb_cl_device_info *d)
{
	if (strcmp(t->platform, d->platform_name))
		return MB_TUNING_NONE;
	if (!strcmp(t->device, d->name) && !strcmp(t->driver, d->driver))
		return MB_TUNING_EXACT;
	if (t->arch[0] && !strcmp(t->arch, d->arch) && !strcmp(t->driver, d->driver))
		return MB_TUNING_ARCHITECTURE;
	if (t->type[0] && !strcmp(t->type, d->type))
		return MB_TUNING_FAMILY;
	return MB_TUNING_NONE;
}

void mb_tuning_set_key(struct mb_tuning *t, const struct mb_cl_device_info *d)
{
	snprintf(t->platform, sizeof(t->platform), "%s", d->platform_name);
	snprintf(t->device, sizeof(t->device), "%s", d->name);
	snprintf(t->driver, sizeof(t->driver), "%s", d->driver);
	snprintf(t->arch, sizeof(t->arch), "%s", d->arch);
	snprintf(t->type, sizeof(t->type), "%s", d->type);
}

void mb_tuning_put(struct mb_tuning *t, const struct mb_tuning_kernel *k)
{
	size_t i;

	for (i = 0; i < t->nkernels && strcmp(t->kernel[i].name, k->name); i++)
		;
	if (i < MB_TUNING_KERNELS_MAX) {
		t->kernel[i] = *k;
		t->nkernels += i == t->nkernels;
	}
}

/* "xgemm_direct_2" -> "XgemmDirect", as CLBlastOverrideParameters names it. */
static int kernel_name(const char *family, char *name, size_t len)
{
	static const char *const map[][2] = {
		{ "xgemm_direct", "XgemmDirect" },  { "xgemm", "Xgemm" },
		{ "gemm_routine", "GemmRoutine" },  { "copy", "Copy" },
		{ "padtranspose", "Padtranspose" }, { "pad", "Pad" },
		{ "transpose", "Transpose" },
	};
	size_t i, n;

	for (i = 0; i < sizeof(map) / sizeof(map[0]); i++) {
		n = strlen(map[i][0]);
		if (!strncmp(family, map[i][0], n) &&
		    (!family[n] || (family[n] == '_' && strchr("0123456789", family[n + 1]) &&
				    strcmp(family, "gemm_routine_single_size")))) {
			snprintf(name, len, "%s", map[i][1]);
			return 0;
		}
	}
	return -1;
}

int mb_tuning_read_tuner(const char *path, struct mb_tuning_kernel *k, double *best_ms, char *gemm,
			 size_t gemm_len)
{
	char *text, family[64], best[1024], m[16] = "", n[16] = "", kk[16] = "", *tok, *eq, *end;
	cJSON *root = NULL;
	size_t len;
	int err;

	memset(k, 0, sizeof(*k));
	if ((err = mb_json_read_file(path, "tuner result", &text, &len)))
		return err;
	err = mb_json_parse(text, len, path, &root);
	free(text);
	if (err)
		return err;
	if ((err = key_string(root, "kernel_family", family, sizeof(family), path)) ||
	    (err = key_string(root, "best_parameters", best, sizeof(best), path)))
		goto out;
	key_string(root, "arg_m", m, sizeof(m), path);
	key_string(root, "arg_n", n, sizeof(n), path);
	key_string(root, "arg_k", kk, sizeof(kk), path);
	snprintf(gemm, gemm_len, "%s%s%s%s%s", m, *n ? "x" : "", n, *kk ? "x" : "", kk);
	if (!*gemm)
		snprintf(gemm, gemm_len, "-");
	if (kernel_name(family, k->name, sizeof(k->name))) {
		err = mb_bad_input("%s: kernel family '%s' is not one muonbench applies", path,
				   family);
		goto out;
	}
	{
		const cJSON *t = cJSON_GetObjectItemCaseSensitive(root, "best_time");

		*best_ms = cJSON_IsString(t) ? strtod(t->valuestring, NULL) : 0;
	}
	for (tok = strtok(best, " "); tok && !err; tok = strtok(NULL, " ")) {
		unsigned long v;

		eq = strchr(tok, '=');
		if (!eq || eq == tok || !eq[1])
			goto bad;
		*eq = '\0';
		v = strtoul(eq + 1, &end, 10);
		if (*end)
			goto bad;
		if (!strcmp(tok, "PRECISION")) {
			if (v != 32)
				err = mb_bad_input("%s: tuned for precision %lu; muonbench uses 32",
						   path, v);
			continue;
		}
		if (k->nparams == MB_TUNING_PARAMS_MAX || strlen(tok) >= sizeof(k->param[0]))
			goto bad;
		snprintf(k->param[k->nparams], sizeof(k->param[0]), "%s", tok);
		k->value[k->nparams++] = v;
	}
	if (!err && !k->nparams)
		goto bad;
out:
	cJSON_Delete(root);
	return err;
bad:
	cJSON_Delete(root);
	return mb_bad_input("%s: 'best_parameters' is not a list of NAME=VALUE", path);
}

/* KEY as a file name: platform, device and driver, odd characters as '_'. */
static void key_slug(const struct mb_cl_device_info *d, char *buf, size_t len)
{
	size_t i;

	snprintf(buf, len, "%s-%s-%s", d->platform_name, d->name, d->driver);
	for (i = 0; buf[i]; i++)
		if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-",
			    buf[i]))
			buf[i] = '_';
}

void mb_tuning_cache_file(const struct mb_cl_device_info *d, const char *prefix, const char *suffix,
			  char *buf, size_t len)
{
	const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
	char slug[512];

	key_slug(d, slug, sizeof(slug));
	if (xdg && *xdg)
		snprintf(buf, len, "%s/muonbench/%s-%s.%s", xdg, prefix, slug, suffix);
	else
		snprintf(buf, len, "%s/.cache/muonbench/%s-%s.%s", home ? home : ".", prefix, slug,
			 suffix);
}

void mb_tuning_cache_path(const struct mb_cl_device_info *d, char *buf, size_t len)
{
	mb_tuning_cache_file(d, "clblast", "json", buf, len);
}

int mb_tuning_find(const struct mb_cl_device_info *d, struct mb_tuning *t, char *source, size_t len,
		   enum mb_tuning_match *match)
{
	const struct mb_embedded_file *f;
	enum mb_tuning_match m;
	struct mb_tuning cand;
	const char *shipped;
	struct dirent *e;
	char path[4096];
	DIR *dir;
	int err;

	*match = MB_TUNING_NONE;
	mb_tuning_cache_path(d, path, sizeof(path));
	if (!access(path, F_OK)) {
		if ((err = mb_tuning_load(path, t)))
			return err;
		if (mb_tuning_matches(t, d)) {
			snprintf(source, len, "%s", path);
			*match = MB_TUNING_EXACT;
			return 1;
		}
	}
	/* the cache's files of other devices, then the shipped ones: the first best counts */
	*strrchr(path, '/') = '\0';
	if ((dir = opendir(path))) {
		while ((e = readdir(dir))) {
			size_t n = strlen(e->d_name);
			char file[4400];

			if (strncmp(e->d_name, "clblast-", 8) || n < 13 ||
			    strcmp(e->d_name + n - 5, ".json"))
				continue;
			snprintf(file, sizeof(file), "%s/%s", path, e->d_name);
			if (mb_tuning_load(file, &cand))
				continue; /* another device's file: not this run's business */
			m = mb_tuning_match_of(&cand, d);
			if (m < *match) {
				*t = cand;
				*match = m;
				snprintf(source, len, "%s", file);
			}
		}
		closedir(dir);
	}
	shipped = getenv("MUONBENCH_SHIPPED_TUNINGS");
	for (f = mb_embedded_files; f->path && !(shipped && !strcmp(shipped, "off")); f++) {
		if (strncmp(f->path, "tuning/", 7) ||
		    mb_tuning_parse(f->data, f->size, f->path, &cand))
			continue;
		m = mb_tuning_match_of(&cand, d);
		if (m < *match) {
			*t = cand;
			*match = m;
			snprintf(source, len, "shipped %s", f->path);
		}
	}
	return *match != MB_TUNING_NONE;
}

/* The verdict line of T from SOURCE, without its "pass " or "fail ". */
static void verdict_key(const struct mb_tuning *t, const char *source, char *buf, size_t len)
{
	snprintf(buf, len, "%s tuned %s", source, t->tuned_utc);
}

int mb_tuning_verdict(const struct mb_cl_device_info *d, const struct mb_tuning *t,
		      const char *source)
{
	char path[4096], key[4200], line[4300];
	int verdict = -1;
	size_t n;
	FILE *f;

	mb_tuning_cache_file(d, "verified", "txt", path, sizeof(path));
	verdict_key(t, source, key, sizeof(key));
	if (mb_file_open_read(path, "verdict cache", &f))
		return -1;
	while (fgets(line, sizeof(line), f)) {
		n = strcspn(line, "\n");
		line[n] = '\0';
		if (n > 5 && !strcmp(line + 5, key)) /* the last line for it counts */
			verdict = !strncmp(line, "pass ", 5);
	}
	fclose(f);
	return verdict;
}

int mb_tuning_record_verdict(const struct mb_cl_device_info *d, const struct mb_tuning *t,
			     const char *source, bool passed)
{
	char path[4096], key[4200];
	int err;
	FILE *f;

	mb_tuning_cache_file(d, "verified", "txt", path, sizeof(path));
	verdict_key(t, source, key, sizeof(key));
	if ((err = mb_tuning_make_dirs(path)))
		return err;
	if (!(f = fopen(path, "a")))
		return mb_fail("cannot write '%s': %s", path, strerror(errno));
	if ((fprintf(f, "%s %s\n", passed ? "pass" : "fail", key) < 0) + (fclose(f) != 0))
		return mb_fail("cannot write '%s': %s", path, strerror(errno));
	return 0;
}

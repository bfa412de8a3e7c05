/*
 * mb_profile: the device profile's fields, its reader, setter and writer.
 */
#include "mb_profile.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mb_embedded.h"
#include "mb_err.h"
#include "mb_ns.h"
#include "mb_json.h"
#include "mb_num.h"
#include "mb_tuning.h"

enum kind {
	TEXT, /* char[], at most its size - 1 */
	RATE, /* double, positive and finite */
	TIME, /* double, zero or more, finite */
	BOOL,
	LADDER,	   /* struct mb_profile_ladder, of RATEs */
	PRECISION, /* char[]: fp32, bf16 or fp16; a file may leave it out (fp32) */
	FRACTION,  /* double, 0 to 1; a file may leave it out (0) */
	OPT_RATE,  /* double, 0 (not modelled) or more, finite; a file may leave it out (0) */
	OPT_BOOL,  /* a file may leave it out (false) */
	OPT_TIME,  /* a TIME a file may leave out (0) */
	/* a LADDER by tokens ({"tokens": T, "gflops": G}) a file may leave out (no point);
	 * written only with a point */
	OPT_TOKEN_LADDER,
	/* a ladder of TIMEs, us, by FLOPs ({"flops": F, "us": T}), above 0; as OPT_TOKEN_LADDER,
	 * a file may leave it out */
	OPT_TIME_LADDER,
};

struct field {
	const char *key;
	enum kind kind;
	size_t offset, size;
	const char *unit; /* for errors: "GB/s" */
};

#define AT(f) offsetof(struct mb_profile, f), sizeof(((struct mb_profile *)0)->f)

static const struct field fields[] = {
	{ "name", TEXT, AT(name), "" },
	{ "device", TEXT, AT(device), "" },
	{ "h2d_pinned_gbs", RATE, AT(h2d_pinned_gbs), "GB/s" },
	{ "d2h_pinned_gbs", RATE, AT(d2h_pinned_gbs), "GB/s" },
	{ "both_pinned_gbs", RATE, AT(both_pinned_gbs), "GB/s" },
	{ "h2d_pageable_gbs", RATE, AT(h2d_pageable_gbs), "GB/s" },
	{ "d2h_pageable_gbs", RATE, AT(d2h_pageable_gbs), "GB/s" },
	{ "both_pageable_gbs", RATE, AT(both_pageable_gbs), "GB/s" },
	{ "pageable_holds_host", BOOL, AT(pageable_holds_host), "" },
	{ "pageable_exposed_frac", FRACTION, AT(pageable_exposed_frac), "of the copy's time" },
	{ "ns_gram_gflops", LADDER, AT(ns_gram_gflops), "GFLOP/s" },
	{ "ns_standard_gflops", LADDER, AT(ns_standard_gflops), "GFLOP/s" },
	{ "ns_gram_precision", PRECISION, AT(ns_gram_precision), "fp32, bf16 or fp16" },
	{ "ns_standard_precision", PRECISION, AT(ns_standard_precision), "fp32, bf16 or fp16" },
	{ "momentum_gbs", RATE, AT(momentum_gbs), "GB/s" },
	{ "momentum_bf16_gbs", OPT_RATE, AT(momentum_bf16_gbs), "GB/s" },
	{ "momentum_small_gbs", OPT_RATE, AT(momentum_small_gbs), "GB/s" },
	{ "momentum_bf16_small_gbs", OPT_RATE, AT(momentum_bf16_small_gbs), "GB/s" },
	{ "norm_gbs", RATE, AT(norm_gbs), "GB/s" },
	{ "fill_gbs", RATE, AT(fill_gbs), "GB/s" },
	{ "cast_gbs", RATE, AT(cast_gbs), "GB/s" },
	{ "fwd_bwd_gflops", RATE, AT(fwd_bwd_gflops), "GFLOP/s" },
	{ "forward_gflops", OPT_TOKEN_LADDER, AT(forward_gflops), "GFLOP/s" },
	{ "backward_gflops", OPT_TOKEN_LADDER, AT(backward_gflops), "GFLOP/s" },
	{ "host_opt_gbs", RATE, AT(host_opt_gbs), "GB/s" },
	{ "memcpy_gbs", RATE, AT(memcpy_gbs), "GB/s" },
	{ "host_stream_gbs", OPT_RATE, AT(host_stream_gbs), "GB/s" },
	{ "host_opt_small_gbs", OPT_RATE, AT(host_opt_small_gbs), "GB/s" },
	{ "host_stream_small_gbs", OPT_RATE, AT(host_stream_small_gbs), "GB/s" },
	{ "command_overhead_us", TIME, AT(command_overhead_us), "us" },
	{ "command_latency_us", OPT_TIME, AT(command_latency_us), "us" },
	{ "peer_gbs", OPT_RATE, AT(peer_gbs), "GB/s" },
	{ "peer_shares_pcie", OPT_BOOL, AT(peer_shares_pcie), "" },
	{ "h2d_pinned_small_gbs", OPT_RATE, AT(h2d_pinned_small_gbs), "GB/s" },
	{ "d2h_pinned_small_gbs", OPT_RATE, AT(d2h_pinned_small_gbs), "GB/s" },
	{ "both_pinned_small_gbs", OPT_RATE, AT(both_pinned_small_gbs), "GB/s" },
	{ "h2d_pageable_small_gbs", OPT_RATE, AT(h2d_pageable_small_gbs), "GB/s" },
	{ "d2h_pageable_small_gbs", OPT_RATE, AT(d2h_pageable_small_gbs), "GB/s" },
	{ "both_pageable_small_gbs", OPT_RATE, AT(both_pageable_small_gbs), "GB/s" },
	{ "command_latency_busy_us", OPT_TIME, AT(command_latency_busy_us), "us" },
	{ "median_rates", OPT_BOOL, AT(median_rates), "" },
	{ "ns_enqueue_us", OPT_TIME, AT(ns_enqueue_us), "us" },
	{ "enqueue_contention_frac", FRACTION, AT(enqueue_contention_frac), "of a kernel's rate" },
	{ "host_pass_us", OPT_TIME, AT(host_pass_us), "us" },
	{ "ns_gram_enqueue_us", OPT_TIME_LADDER, AT(ns_gram_enqueue_us), "us" },
	{ "ns_standard_enqueue_us", OPT_TIME_LADDER, AT(ns_standard_enqueue_us), "us" },
};

#define NFIELDS (sizeof(fields) / sizeof(fields[0]))

const char *mb_profile_key(size_t i)
{
	return i < NFIELDS ? fields[i].key : NULL;
}

static const struct field *find(const char *key)
{
	size_t i;

	for (i = 0; i < NFIELDS; i++)
		if (!strcmp(fields[i].key, key))
			return &fields[i];
	return NULL;
}

static void *at(struct mb_profile *p, const struct field *f)
{
	return (char *)p + f->offset;
}

double mb_profile_ladder_at(const struct mb_profile_ladder *l, double flops)
{
	size_t i;
	double t;

	if (flops <= l->flops[0])
		return l->value[0];
	for (i = 1; i < l->n; i++)
		if (flops <= l->flops[i])
			break;
	if (i == l->n)
		return l->value[l->n - 1];
	if (flops == l->flops[i])
		return l->value[i];
	t = log(flops / l->flops[i - 1]) / log(l->flops[i] / l->flops[i - 1]);
	return exp(log(l->value[i - 1]) + t * log(l->value[i] / l->value[i - 1]));
}

double mb_profile_sized_rate(double large, double small, double x, double x_small, double x_large)
{
	double t;

	if (!(small > 0) || x >= x_large)
		return large;
	if (x <= x_small)
		return small;
	t = log(x / x_small) / log(x_large / x_small);
	return exp(log(small) + t * log(large / small));
}

void mb_profile_ladder_set(struct mb_profile_ladder *l, double gflops)
{
	size_t i;

	if (!l->n) {
		l->n = 1;
		l->flops[0] = 1;
	}
	for (i = 0; i < l->n; i++)
		l->value[i] = gflops;
}

/*
 * The one rule of every rate, a file's or an option's: from RATE_MIN (below
 * it a step's times overflow, or lose every digit to a subnormal) to
 * RATE_MAX (10^9 GB/s or GFLOP/s, a thousand times any device's); a
 * command's overhead up to TIME_MAX microseconds (a second).
 */
#define RATE_MIN 1e-6
#define RATE_MAX 1e9
#define TIME_MAX 1e6

/* A number of field F's kind: why not, or NULL. */
static const char *check_number(const struct field *f, double d)
{
	switch (f->kind) {
	case RATE:
	case LADDER:
	case OPT_TOKEN_LADDER:
		return isfinite(d) && d >= RATE_MIN && d <= RATE_MAX ? NULL : "must be 1e-6 to 1e9";
	case OPT_RATE:
		return isfinite(d) && (d == 0 || (d >= RATE_MIN && d <= RATE_MAX))
			       ? NULL
			       : "must be 0 (not modelled) or 1e-6 to 1e9";
	case TIME:
	case OPT_TIME:
		return isfinite(d) && d >= 0 && d <= TIME_MAX ? NULL : "must be 0 to 1e6";
	case OPT_TIME_LADDER: /* a file's points above 0 (read_point); an option's 0: no point */
		return isfinite(d) && d >= 0 && d <= TIME_MAX ? NULL : "must be at most 1e6";
	case FRACTION:
		return isfinite(d) && d >= 0 && d <= 1 ? NULL : "must be a number from 0 to 1";
	default:
		return NULL;
	}
}

struct reader {
	const char *source, *text;
	size_t len;
	const cJSON *root;
};

/* "SOURCE:LINE:COL: KEY: what" at V (or "SOURCE: KEY: what" if V cannot be found), of KIND. */
__attribute__((format(printf, 5, 0))) static int vbad(const struct reader *r, enum mb_err_kind kind,
						      const cJSON *v, const char *key,
						      const char *fmt, va_list ap)
{
	struct mb_json_span s;
	char what[512];

	vsnprintf(what, sizeof(what), fmt, ap);
	if (v && mb_json_where(r->text, r->len, r->root, v, &s))
		return mb_bad_input_kind(kind, "%s:%zu:%zu: %s: %s", r->source, s.line, s.col, key,
					 what);
	return mb_bad_input_kind(kind, "%s: %s: %s", r->source, key, what);
}

__attribute__((format(printf, 4, 5))) static int bad(const struct reader *r, const cJSON *v,
						     const char *key, const char *fmt, ...)
{
	va_list ap;
	int err;

	va_start(ap, fmt);
	err = vbad(r, MB_KIND_OTHER, v, key, fmt, ap);
	va_end(ap);
	return err;
}

__attribute__((format(printf, 4, 5))) static int bad_old(const struct reader *r, const cJSON *v,
							 const char *key, const char *fmt, ...)
{
	va_list ap;
	int err;

	va_start(ap, fmt);
	err = vbad(r, MB_KIND_OLD_FORMAT, v, key, fmt, ap);
	va_end(ap);
	return err;
}

static bool is_ladder(const struct field *f)
{
	return f->kind == LADDER || f->kind == OPT_TOKEN_LADDER || f->kind == OPT_TIME_LADDER;
}

/* A ladder a file may leave out, and that is written only with a point. */
static bool is_optional_ladder(const struct field *f)
{
	return f->kind == OPT_TOKEN_LADDER || f->kind == OPT_TIME_LADDER;
}

/* What a point of F's ladder is keyed by: "flops" (a matrix's), or "tokens". */
static const char *point_key(const struct field *f)
{
	return f->kind == OPT_TOKEN_LADDER ? "tokens" : "flops";
}

/* What a point of F's ladder holds: "gflops", or "us" (a time); and its letter in a message. */
static const char *value_key(const struct field *f)
{
	return f->kind == OPT_TIME_LADDER ? "us" : "gflops";
}

static const char *value_letter(const struct field *f)
{
	return f->kind == OPT_TIME_LADDER ? "T" : "G";
}

/* Point V (the I-th) of ladder F's into *L: {"flops": F, "gflops": G}, F above the last. */
static int read_point(const struct reader *r, const struct field *f, const cJSON *v, size_t i,
		      struct mb_profile_ladder *l)
{
	const char *const names[] = { point_key(f), value_key(f) };
	const char *why;
	double d[2];
	const cJSON *e;
	size_t k;

	if (!cJSON_IsObject(v) || cJSON_GetArraySize(v) != 2)
		return bad(r, v, f->key,
			   "point %zu must be an object {\"%s\": F, \"%s\": %s}, got %s", i + 1,
			   names[0], names[1], value_letter(f),
			   cJSON_IsObject(v) ? "other keys" : mb_json_type_name(v));
	for (k = 0; k < 2; k++) {
		e = cJSON_GetObjectItemCaseSensitive(v, names[k]);
		if (!e)
			return bad(r, v, f->key, "point %zu: missing key \"%s\"", i + 1, names[k]);
		if (!cJSON_IsNumber(e) || !isfinite(e->valuedouble) || e->valuedouble <= 0)
			return bad(r, e, f->key, "point %zu: %s must be a positive number", i + 1,
				   names[k]);
		d[k] = e->valuedouble;
	}
	if ((why = check_number(f, d[1])))
		return bad(r, v, f->key, "point %zu: %s %s (%s), got %.17g", i + 1, names[1], why,
			   f->unit, d[1]);
	if (i && d[0] <= l->flops[i - 1])
		return bad(r, v, f->key,
			   "point %zu: %s %.17g not above the point before's (%.17g): the "
			   "ladder goes up in %s",
			   i + 1, names[0], d[0], l->flops[i - 1],
			   f->kind == OPT_TOKEN_LADDER ? "tokens" : "FLOPs");
	l->flops[i] = d[0];
	l->value[i] = d[1];
	return 0;
}

/* Whether S names a precision of Newton-Schulz's GEMMs (mb_precision_names). */
static bool is_precision(const char *s)
{
	int k;

	for (k = 0; k < MB_NPRECISIONS; k++)
		if (!strcmp(s, mb_precision_names[k]))
			return true;
	return false;
}

/* Ladder F from V: a list of 1 to MB_PROFILE_LADDER_MAX points. */
static int read_ladder(const struct reader *r, struct mb_profile_ladder *l, const struct field *f,
		       const cJSON *v)
{
	const cJSON *e;
	size_t i = 0;
	int err;

	if (!cJSON_IsArray(v))
		return bad(r, v, f->key, "must be a list of {\"%s\": F, \"%s\": %s} points, got %s",
			   point_key(f), value_key(f), value_letter(f), mb_json_type_name(v));
	if (cJSON_GetArraySize(v) < 1 || cJSON_GetArraySize(v) > MB_PROFILE_LADDER_MAX)
		return bad(r, v, f->key, "must hold 1 to %d points, got %d", MB_PROFILE_LADDER_MAX,
			   cJSON_GetArraySize(v));
	cJSON_ArrayForEach(e, v) {
		if ((err = read_point(r, f, e, i, l)))
			return err;
		i++;
	}
	l->n = i;
	return 0;
}

static int read_field(const struct reader *r, struct mb_profile *p, const struct field *f,
		      const cJSON *v)
{
	const char *why;

	switch (f->kind) {
	case TEXT:
		if (!cJSON_IsString(v))
			return bad(r, v, f->key, "must be a string, got %s", mb_json_type_name(v));
		if (strlen(v->valuestring) >= f->size)
			return bad(r, v, f->key, "longer than %zu bytes", f->size - 1);
		snprintf(at(p, f), f->size, "%s", v->valuestring);
		return 0;
	case BOOL:
	case OPT_BOOL:
		if (!cJSON_IsBool(v))
			return bad(r, v, f->key, "must be true or false, got %s",
				   mb_json_type_name(v));
		*(bool *)at(p, f) = cJSON_IsTrue(v);
		return 0;
	case RATE:
	case TIME:
	case OPT_TIME:
	case FRACTION:
	case OPT_RATE:
		if (!cJSON_IsNumber(v))
			return bad(r, v, f->key, "must be a number (%s), got %s", f->unit,
				   mb_json_type_name(v));
		if ((why = check_number(f, v->valuedouble)))
			return bad(r, v, f->key, "%s (%s), got %.17g", why, f->unit,
				   v->valuedouble);
		*(double *)at(p, f) = v->valuedouble;
		return 0;
	case LADDER:
	case OPT_TOKEN_LADDER:
	case OPT_TIME_LADDER:
		return read_ladder(r, at(p, f), f, v);
	case PRECISION:
		if (!cJSON_IsString(v) || !is_precision(v->valuestring))
			return bad(r, v, f->key, "must be \"fp32\", \"bf16\" or \"fp16\"");
		snprintf(at(p, f), f->size, "%s", v->valuestring);
		return 0;
	}
	return 0;
}

static int read_version(const struct reader *r, const cJSON *v)
{
	if (!v)
		return mb_bad_input("%s: missing key \"format_version\" (this muonbench reads "
				    "version %d)",
				    r->source, MB_PROFILE_FORMAT_VERSION);
	if (cJSON_IsNumber(v) && v->valuedouble == MB_PROFILE_FORMAT_VERSION)
		return 0;
	/* an older muonbench's: measured with other kernels, and without the newer keys */
	if (cJSON_IsNumber(v) && v->valuedouble >= 1 &&
	    v->valuedouble < MB_PROFILE_FORMAT_VERSION && v->valuedouble == (int)v->valuedouble)
		return bad_old(r, v, "format_version",
			       "a profile of version %d, from an older muonbench (this one reads "
			       "version %d, each rate a mean over interleaved rounds): run "
			       "`muonbench profile` to measure it again",
			       (int)v->valuedouble, MB_PROFILE_FORMAT_VERSION);
	return bad(r, v, "format_version",
		   "a profile of another version (this muonbench reads version %d)",
		   MB_PROFILE_FORMAT_VERSION);
}

static int read_tree(const struct reader *r, struct mb_profile *p)
{
	bool seen[NFIELDS] = { false };
	const struct field *f;
	const cJSON *v;
	size_t i;
	int err;

	if (!cJSON_IsObject(r->root))
		return mb_bad_input("%s: a device profile must be a JSON object, got %s", r->source,
				    mb_json_type_name(r->root));
	if ((err = read_version(r, cJSON_GetObjectItemCaseSensitive(r->root, "format_version"))))
		return err;
	cJSON_ArrayForEach(v, r->root) {
		if (!strcmp(v->string, "format_version") || !strcmp(v->string, "note"))
			continue; /* the note is for people: a string or a list of them */
		if (!(f = find(v->string)))
			return bad(r, v, v->string, "not a key of a device profile");
		if (seen[f - fields])
			return bad(r, v, v->string, "given twice");
		seen[f - fields] = true;
		if ((err = read_field(r, p, f, v)))
			return err;
	}
	for (i = 0; i < NFIELDS; i++)
		if (!seen[i] && !p->lacks)
			p->lacks = fields[i].key;
	for (i = 0; i < NFIELDS; i++)
		if (!seen[i] && fields[i].kind == PRECISION)
			snprintf(at(p, &fields[i]), fields[i].size, "fp32");
		else if (!seen[i] && (fields[i].kind == FRACTION || fields[i].kind == OPT_RATE ||
				      fields[i].kind == OPT_TIME))
			*(double *)at(p, &fields[i]) = 0;
		else if (!seen[i] && fields[i].kind == OPT_BOOL)
			*(bool *)at(p, &fields[i]) = false;
		else if (!seen[i] && is_optional_ladder(&fields[i]))
			((struct mb_profile_ladder *)at(p, &fields[i]))->n = 0;
		else if (!seen[i])
			return mb_bad_input("%s: missing key \"%s\"", r->source, fields[i].key);
	return 0;
}

int mb_profile_parse(struct mb_profile *p, const char *text, size_t len, const char *source)
{
	struct reader r = { .source = source, .text = text, .len = len };
	cJSON *root;
	int err;

	memset(p, 0, sizeof(*p));
	if ((err = mb_json_parse(text, len, source, &root)))
		return err;
	r.root = root;
	err = read_tree(&r, p);
	cJSON_Delete(root);
	return err;
}

/* The shipped profiles' names, "a, b", into BUF. */
static const char *shipped(char *buf, size_t len)
{
	const struct mb_embedded_file *e;
	size_t n = 0;

	buf[0] = '\0';
	for (e = mb_embedded_files; e->path; e++) {
		const char *base = e->path + strlen("profiles/");

		if (strncmp(e->path, "profiles/", strlen("profiles/")) || n >= len)
			continue;
		n += (size_t)snprintf(buf + n, len - n, "%s%.*s", n ? ", " : "",
				      (int)(strlen(base) - strlen(".json")), base);
	}
	return buf;
}

int mb_profile_load(struct mb_profile *p, const char *name)
{
	const struct mb_embedded_file *e;
	char path[320], names[256];
	size_t n = strlen(name), len;
	char *text;
	int err;

	memset(p, 0, sizeof(*p));
	if (strchr(name, '/') || (n > 5 && !strcmp(name + n - 5, ".json"))) {
		if ((err = mb_json_read_file(name, "device profile", &text, &len)))
			return err;
		err = mb_profile_parse(p, text, len, name);
		free(text);
		return err;
	}
	snprintf(path, sizeof(path), "profiles/%s.json", name);
	if (!(e = mb_embedded_find(path)))
		return mb_bad_input("no device profile '%s' (shipped: %s; or give a FILE.json)",
				    name, shipped(names, sizeof(names)));
	return mb_profile_parse(p, e->data, e->size, path);
}

/* What setting field KEY by hand clears: the optional refinements of its rate. */
static void clear_refinements(struct mb_profile *p, const char *key)
{
	if (!strcmp(key, "fwd_bwd_gflops"))
		p->forward_gflops.n = p->backward_gflops.n = 0;
	else if (!strcmp(key, "memcpy_gbs"))
		p->host_stream_gbs = p->host_stream_small_gbs = 0;
	else if (!strcmp(key, "momentum_gbs"))
		p->momentum_bf16_gbs = p->momentum_small_gbs = p->momentum_bf16_small_gbs = 0;
	else if (!strcmp(key, "host_opt_gbs"))
		p->host_opt_small_gbs = 0;
	else if (!strcmp(key, "h2d_pinned_gbs"))
		p->h2d_pinned_small_gbs = 0;
	else if (!strcmp(key, "d2h_pinned_gbs"))
		p->d2h_pinned_small_gbs = 0;
	else if (!strcmp(key, "both_pinned_gbs"))
		p->both_pinned_small_gbs = 0;
	else if (!strcmp(key, "h2d_pageable_gbs"))
		p->h2d_pageable_small_gbs = 0;
	else if (!strcmp(key, "d2h_pageable_gbs"))
		p->d2h_pageable_small_gbs = 0;
	else if (!strcmp(key, "both_pageable_gbs"))
		p->both_pageable_small_gbs = 0;
	else if (!strcmp(key, "ns_enqueue_us"))
		p->ns_gram_enqueue_us.n = p->ns_standard_enqueue_us.n = 0;
}

int mb_profile_set(struct mb_profile *p, const char *key, const char *value, const char *what)
{
	const struct field *f = find(key);
	const char *why;
	char *end;
	double d;

	if (!f)
		return mb_bad_input("%s: no profile field '%s'", what, key);
	switch (f->kind) {
	case TEXT:
		if (strlen(value) >= f->size)
			return mb_bad_input("%s: longer than %zu bytes", what, f->size - 1);
		snprintf(at(p, f), f->size, "%s", value);
		return 0;
	case PRECISION:
		if (!is_precision(value))
			return mb_bad_input("%s: '%s' is not fp32, bf16 or fp16", what, value);
		snprintf(at(p, f), f->size, "%s", value);
		return 0;
	case BOOL:
	case OPT_BOOL:
		if (!strcmp(value, "on") || !strcmp(value, "true"))
			*(bool *)at(p, f) = true;
		else if (!strcmp(value, "off") || !strcmp(value, "false"))
			*(bool *)at(p, f) = false;
		else
			return mb_bad_input("%s: invalid value '%s' (expected on or off)", what,
					    value);
		return 0;
	case RATE:
	case TIME:
	case OPT_TIME:
	case FRACTION:
	case OPT_RATE:
	case LADDER:
	case OPT_TOKEN_LADDER:
	case OPT_TIME_LADDER:
		d = strtod(value, &end);
		/* decimal, as every number on the command line: no space, sign, hex, inf or nan */
		if (!mb_num_is_decimal(value) || *end)
			return mb_bad_input(
				"%s: invalid number '%s'%s (%s)", what, value,
				strchr("+-", *value) && *value ? ": a number takes no sign" : "",
				f->unit);
		if (mb_num_underflows(value, d))
			return mb_bad_input("%s: '%s' is too small to hold (it would read as 0)",
					    what, value);
		if ((why = check_number(f, d)))
			return mb_bad_input("%s: %s (%s), got '%s'", what, why, f->unit, value);
		if (f->kind == OPT_TIME_LADDER && d == 0)
			((struct mb_profile_ladder *)at(p, f))->n = 0;
		else if (is_ladder(f))
			mb_profile_ladder_set(at(p, f), d);
		else
			*(double *)at(p, f) = d;
		clear_refinements(p, key);
		return 0;
	}
	return 0;
}

double mb_profile_get(const struct mb_profile *p, const char *key)
{
	const struct field *f = find(key);

	if (!f || f->kind == TEXT || f->kind == PRECISION)
		return NAN;
	if (f->kind == BOOL || f->kind == OPT_BOOL)
		return *(const bool *)((const char *)p + f->offset);
	if (is_ladder(f)) {
		const struct mb_profile_ladder *l = (const void *)((const char *)p + f->offset);
		size_t i;

		for (i = 1; i < l->n; i++)
			if (l->value[i] != l->value[0])
				return NAN;
		return l->n ? l->value[0] : NAN;
	}
	return *(const double *)((const char *)p + f->offset);
}

static void write_text(FILE *out, const char *s)
{
	fputc('"', out);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			fprintf(out, "\\%c", c);
		else if (c < 0x20)
			fprintf(out, "\\u%04x", c);
		else
			fputc(c, out);
	}
	fputc('"', out);
}

static void write_ladder(FILE *out, const struct mb_profile_ladder *l, const struct field *f)
{
	size_t i;

	fputc('[', out);
	for (i = 0; i < l->n; i++)
		fprintf(out, "%s\n    { \"%s\": %.17g, \"%s\": %.17g }", i ? "," : "", point_key(f),
			l->flops[i], value_key(f), l->value[i]);
	fputs("\n  ]", out);
}

void mb_profile_write(FILE *out, const struct mb_profile *p)
{
	const char *base = (const char *)p;
	size_t i;

	fprintf(out, "{\n  \"format_version\": %d", MB_PROFILE_FORMAT_VERSION);
	for (i = 0; i < NFIELDS; i++) {
		const struct field *f = &fields[i];

		if (is_optional_ladder(f) &&
		    !((const struct mb_profile_ladder *)(base + f->offset))->n)
			continue; /* none measured: as a file from before the key */
		fprintf(out, ",\n  \"%s\": ", f->key);
		if (f->kind == TEXT)
			write_text(out, base + f->offset);
		else if (f->kind == PRECISION)
			write_text(out, *(base + f->offset) ? base + f->offset : "fp32");
		else if (f->kind == BOOL || f->kind == OPT_BOOL)
			fputs(*(const bool *)(base + f->offset) ? "true" : "false", out);
		else if (is_ladder(f))
			write_ladder(out, (const void *)(base + f->offset), f);
		else
			fprintf(out, "%.17g", *(const double *)(base + f->offset));
	}
	fprintf(out, "\n}\n");
}

int mb_profile_save(const char *path, const struct mb_profile *p)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	int err;

	if (!f)
		return mb_fail("out of host memory formatting a profile");
	mb_profile_write(f, p);
	if (fclose(f) || !text) {
		free(text);
		return mb_fail("out of host memory formatting a profile");
	}
	err = mb_json_write_file(path, text);
	free(text);
	return err;
}

void mb_profile_cache_path(const struct mb_cl_device_info *d, char *buf, size_t len)
{
	mb_tuning_cache_file(d, "profile", "json", buf, len);
}

/* A copy rate shared by RANKS links through a host memory carrying HOST of that kind. */
static double shared_rate(double rate, double host, unsigned ranks)
{
	double share = fmax(rate, host) / ranks;

	return share < rate ? share : rate;
}

void mb_profile_for_ranks(struct mb_profile *out, const struct mb_profile *p, unsigned ranks)
{
	/* host memory's traffic a second: a memcpy reads and writes each byte */
	double traffic = 2 * p->memcpy_gbs, pinned = traffic, pageable = traffic / 3;
	char name[sizeof(out->name)], device[sizeof(out->device)];

	*out = *p;
	if (ranks <= 1)
		return;
	out->host_opt_gbs = p->host_opt_gbs / ranks;
	out->memcpy_gbs = p->memcpy_gbs / ranks;
	out->host_stream_gbs = p->host_stream_gbs / ranks;
	out->host_opt_small_gbs = p->host_opt_small_gbs / ranks;
	out->host_stream_small_gbs = p->host_stream_small_gbs / ranks;
	out->h2d_pinned_gbs = shared_rate(p->h2d_pinned_gbs, pinned, ranks);
	out->d2h_pinned_gbs = shared_rate(p->d2h_pinned_gbs, pinned, ranks);
	out->both_pinned_gbs = shared_rate(p->both_pinned_gbs, pinned, ranks);
	out->h2d_pageable_gbs = shared_rate(p->h2d_pageable_gbs, pageable, ranks);
	out->d2h_pageable_gbs = shared_rate(p->d2h_pageable_gbs, pageable, ranks);
	out->both_pageable_gbs = shared_rate(p->both_pageable_gbs, pageable, ranks);
	/* a small copy's rate likewise (0, not measured, stays 0) */
	out->h2d_pinned_small_gbs = shared_rate(p->h2d_pinned_small_gbs, pinned, ranks);
	out->d2h_pinned_small_gbs = shared_rate(p->d2h_pinned_small_gbs, pinned, ranks);
	out->both_pinned_small_gbs = shared_rate(p->both_pinned_small_gbs, pinned, ranks);
	out->h2d_pageable_small_gbs = shared_rate(p->h2d_pageable_small_gbs, pageable, ranks);
	out->d2h_pageable_small_gbs = shared_rate(p->d2h_pageable_small_gbs, pageable, ranks);
	out->both_pageable_small_gbs = shared_rate(p->both_pageable_small_gbs, pageable, ranks);
	snprintf(name, sizeof(name), "%.40s (a rank of %u)", p->name, ranks);
	snprintf(device, sizeof(device), "%.200s; %u ranks on one host", p->device, ranks);
	memcpy(out->name, name, sizeof(name));
	memcpy(out->device, device, sizeof(device));
}

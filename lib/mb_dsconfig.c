/*
 * mb_dsconfig: the keys of a DeepSpeed config that muonbench replays, as
 * option settings; the cJSON tree is read here and deleted here.
 */
#include "mb_dsconfig.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mb_err.h"
#include "mb_json.h"

#define VALUE_LEN sizeof(((struct mb_dsconfig_setting *)0)->value)

enum kind {
	SECTION, /* an object whose keys are read too */
	OFFLOAD, /* offload_optimizer: a SECTION that must name its device */
	STAGE,	 /* 1, 2 or 3 */
	NUMBER,	 /* a JSON number, its digits passed on */
	ONOFF,	 /* true/false: on/off */
	DEVICE,	 /* "cpu" */
	BF16,	 /* false: fp32 momentum */
	FP16,	 /* true refused */
};

struct key {
	const char *path;
	enum kind kind;
	const char *option;
};

static const struct key keys[] = {
	{ "zero_optimization", SECTION, NULL },
	{ "zero_optimization.stage", STAGE, "stage" },
	{ "zero_optimization.sub_group_size", NUMBER, "sub-group-size" },
	{ "zero_optimization.reduce_bucket_size", NUMBER, "reduce-bucket-size" },
	{ "zero_optimization.offload_optimizer", OFFLOAD, NULL },
	{ "zero_optimization.offload_optimizer.device", DEVICE, NULL },
	{ "zero_optimization.offload_optimizer.pin_memory", ONOFF, "pin-memory" },
	{ "gradient_clipping", NUMBER, "grad-clip" },
	{ "bf16", SECTION, NULL },
	{ "bf16.enabled", BF16, "momentum-dtype" },
	{ "fp16", SECTION, NULL },
	{ "fp16.enabled", FP16, NULL },
	{ "train_micro_batch_size_per_gpu", NUMBER, "micro-batch" },
};

#define NKEYS (sizeof(keys) / sizeof(keys[0]))

static const char bf16_off_note[] =
	"bf16.enabled is false: the Muon momentum that ZeRO-3 keeps in the communication "
	"dtype is fp32, not bf16 (--momentum-dtype fp32); the params and grads stay bf16";

struct reader {
	const char *text;
	size_t len;
	const cJSON *root;
	struct mb_dsconfig *ds;
	size_t unused_cap;
};

/* The key read as NAME inside the section PREFIX ("" at the top), or NULL. */
static const struct key *find(const char *prefix, const char *name)
{
	size_t i, n = strlen(prefix);
	const char *p;

	if (strchr(name, '.'))
		return NULL;
	for (i = 0; i < NKEYS; i++) {
		p = keys[i].path;
		if (n && (strncmp(p, prefix, n) || p[n] != '.'))
			continue;
		if (!strcmp(p + (n ? n + 1 : 0), name))
			return &keys[i];
	}
	return NULL;
}

static int where(const struct reader *r, const cJSON *v, struct mb_json_span *at)
{
	if (!mb_json_where(r->text, r->len, r->root, v, at))
		return mb_fail("%s: cannot find a value of the parsed tree in the text",
			       r->ds->source);
	return 0;
}

/* Refuse the value V of KEY, at AT: "SOURCE:LINE:COL: KEY: what". */
__attribute__((format(printf, 4, 5))) static int
bad(const struct reader *r, const char *key, const struct mb_json_span *at, const char *fmt, ...)
{
	char what[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	return mb_bad_input("%s:%zu:%zu: %s: %s", r->ds->source, at->line, at->col, key, what);
}

/* The value's own text, for messages: at most 40 bytes of it. */
static int raw_len(const struct mb_json_span *at)
{
	return (int)(at->end - at->start < 40 ? at->end - at->start : 40);
}

static int add_unused(struct reader *r, const char *prefix, const char *name)
{
	struct mb_dsconfig *ds = r->ds;
	size_t used = strlen(ds->unused), need, i, n = strlen(prefix);
	char *grown;

	need = used + 2 + n + 1 + strlen(name) + 1;
	if (need > r->unused_cap) {
		grown = realloc(ds->unused, need * 2);
		if (!grown)
			return mb_fail("out of host memory reading %s", ds->source);
		ds->unused = grown;
		r->unused_cap = need * 2;
	}
	snprintf(ds->unused + used, r->unused_cap - used, "%s%s%s%s", used ? ", " : "", prefix,
		 n ? "." : "", name);
	for (i = used; ds->unused[i]; i++) /* decoded escapes: keep stderr one line */
		if (!isprint((unsigned char)ds->unused[i]) &&
		    !((unsigned char)ds->unused[i] & 0x80))
			ds->unused[i] = '?';
	ds->nunused++;
	return 0;
}

static struct mb_dsconfig_setting *add(struct reader *r, const struct key *k,
				       const struct mb_json_span *at)
{
	struct mb_dsconfig_setting *s = &r->ds->settings[r->ds->nsettings++];

	memset(s, 0, sizeof(*s));
	s->option = k->option;
	snprintf(s->key, sizeof(s->key), "%s", k->path);
	s->line = at->line;
	s->col = at->col;
	return s;
}

static bool is_auto(const cJSON *v)
{
	return cJSON_IsString(v) && !strcmp(v->valuestring, "auto");
}

static int walk(struct reader *r, const cJSON *obj, const char *prefix);

static int read_stage(struct reader *r, const struct key *k, const cJSON *v,
		      const struct mb_json_span *at)
{
	double d = v->valuedouble;

	if (!cJSON_IsNumber(v))
		return bad(r, k->path, at, "must be 1, 2 or 3, got %s", mb_json_type_name(v));
	if (d == 0)
		return bad(r, k->path, at,
			   "0 is not replayed: muonbench replays ZeRO-1, 2 and 3 with the "
			   "optimizer offloaded to the CPU");
	if (d != 1 && d != 2 && d != 3)
		return bad(r, k->path, at, "must be 1, 2 or 3, got %.*s", raw_len(at),
			   r->text + at->start);
	snprintf(add(r, k, at)->value, VALUE_LEN, "%d", (int)d);
	return 0;
}

static int read_number(struct reader *r, const struct key *k, const cJSON *v,
		       const struct mb_json_span *at)
{
	size_t n = at->end - at->start;

	if (!cJSON_IsNumber(v))
		return bad(r, k->path, at, "must be a number, got %s", mb_json_type_name(v));
	if (n >= VALUE_LEN)
		return bad(r, k->path, at, "the number %.*s... is longer than %zu characters",
			   raw_len(at), r->text + at->start, VALUE_LEN - 1);
	memcpy(add(r, k, at)->value, r->text + at->start, n);
	return 0;
}

static int read_device(struct reader *r, const struct key *k, const cJSON *v,
		       const struct mb_json_span *at)
{
	if (!cJSON_IsString(v))
		return bad(r, k->path, at, "must be \"cpu\", got %s", mb_json_type_name(v));
	if (!strcmp(v->valuestring, "cpu")) {
		r->ds->offload_cpu = true;
		return 0;
	}
	if (!strcmp(v->valuestring, "none") || !strcmp(v->valuestring, "nvme"))
		return bad(r, k->path, at,
			   "\"%s\" is not replayed: muonbench replays the optimizer offloaded to "
			   "the CPU (\"cpu\")%s",
			   v->valuestring,
			   strcmp(v->valuestring, "none") ? ", not to NVMe"
							  : ", not kept on the accelerator");
	return bad(r, k->path, at, "must be \"cpu\" (DeepSpeed's cpu, nvme or none), got %.*s",
		   raw_len(at), r->text + at->start);
}

/*
 * The section offload_optimizer, V, once its keys are read: it must say
 * "device". DeepSpeed's DeepSpeedZeroOffloadOptimizerConfig defaults device to
 * "none", so a section without one (or with null) offloads nothing there.
 */
static int read_offload(struct reader *r, const struct key *k, const cJSON *v,
			const struct mb_json_span *at)
{
	const cJSON *d = cJSON_GetObjectItemCaseSensitive(v, "device");

	if (d && !cJSON_IsNull(d))
		return 0;
	return bad(r, k->path, at,
		   "no \"device\": DeepSpeed's default is \"none\", the optimizer kept on the "
		   "accelerator, which is not replayed: muonbench replays the optimizer "
		   "offloaded to the CPU (\"device\": \"cpu\")");
}

/* A boolean key: ONOFF, BF16 or FP16. */
static int read_bool(struct reader *r, const struct key *k, const cJSON *v,
		     const struct mb_json_span *at)
{
	struct mb_dsconfig_setting *s;

	if (!cJSON_IsBool(v))
		return bad(r, k->path, at, "must be true or false, got %s", mb_json_type_name(v));
	if (k->kind == ONOFF) {
		snprintf(add(r, k, at)->value, VALUE_LEN, "%s", cJSON_IsTrue(v) ? "on" : "off");
	} else if (k->kind == BF16 && cJSON_IsFalse(v)) {
		s = add(r, k, at);
		snprintf(s->value, VALUE_LEN, "fp32");
		s->note = bf16_off_note;
	} else if (k->kind == FP16 && cJSON_IsTrue(v)) {
		return bad(r, k->path, at,
			   "fp16 training is not replayed: muonbench replays bf16 training "
			   "(bf16.enabled), with bf16 params and grads");
	}
	return 0;
}

/* V, the value of the key K that the file gives (null is left out before). */
static int read_key(struct reader *r, const struct key *k, const cJSON *v)
{
	struct mb_dsconfig_setting *s;
	struct mb_json_span at;
	int err;

	if ((err = where(r, v, &at)))
		return err;
	if (k->kind != SECTION && k->kind != OFFLOAD && k->kind != DEVICE && is_auto(v)) {
		s = add(r, k, &at);
		s->is_auto = true;
		if (k->kind == BF16 || k->kind == FP16) { /* muonbench's own: bf16 training */
			s->option = NULL;
			snprintf(s->value, VALUE_LEN, "%s", k->kind == BF16 ? "true" : "false");
		}
		return 0;
	}
	switch (k->kind) {
	case SECTION:
	case OFFLOAD:
		if (!cJSON_IsObject(v))
			return bad(r, k->path, &at, "must be an object, got %s",
				   mb_json_type_name(v));
		if ((err = walk(r, v, k->path)) || k->kind == SECTION)
			return err;
		return read_offload(r, k, v, &at);
	case STAGE:
		return read_stage(r, k, v, &at);
	case NUMBER:
		return read_number(r, k, v, &at);
	case DEVICE:
		return read_device(r, k, v, &at);
	case ONOFF:
	case BF16:
	case FP16:
		return read_bool(r, k, v, &at);
	}
	return 0;
}

/* The member before M in its object that has M's key, or NULL. */
static const cJSON *earlier(const cJSON *obj, const cJSON *m)
{
	const cJSON *e;

	for (e = obj->child; e && e != m; e = e->next)
		if (!strcmp(e->string, m->string))
			return e;
	return NULL;
}

/* The members of OBJ, the section PREFIX ("" at the top), in the file's order. */
static int walk(struct reader *r, const cJSON *obj, const char *prefix)
{
	struct mb_json_span at, first;
	const struct key *k;
	const cJSON *m;
	int err;

	cJSON_ArrayForEach(m, obj) {
		k = find(prefix, m->string);
		if (!k) {
			if ((err = add_unused(r, prefix, m->string)))
				return err;
			continue;
		}
		if (earlier(obj, m)) {
			if ((err = where(r, m, &at)) || (err = where(r, earlier(obj, m), &first)))
				return err;
			return bad(r, k->path, &at, "given twice (first at line %zu)", first.line);
		}
		if (!cJSON_IsNull(m) && (err = read_key(r, k, m)))
			return err;
	}
	return 0;
}

int mb_dsconfig_parse(struct mb_dsconfig *ds, const char *text, size_t len, const char *source)
{
	struct reader r = { .text = text, .len = len, .ds = ds };
	cJSON *root;
	int err;

	memset(ds, 0, sizeof(*ds));
	snprintf(ds->source, sizeof(ds->source), "%s", source);
	ds->unused = calloc(1, 64);
	if (!ds->unused)
		return mb_fail("out of host memory reading %s", source);
	r.unused_cap = 64;
	if ((err = mb_json_parse(text, len, source, &root)))
		return err;
	r.root = root;
	if (!cJSON_IsObject(root))
		err = mb_bad_input("%s: a DeepSpeed config must be a JSON object, got %s", source,
				   mb_json_type_name(root));
	else
		err = walk(&r, root, "");
	cJSON_Delete(root);
	return err;
}

int mb_dsconfig_load_file(struct mb_dsconfig *ds, const char *path)
{
	char *text;
	size_t len;
	int err;

	memset(ds, 0, sizeof(*ds));
	if ((err = mb_json_read_file(path, "DeepSpeed config", &text, &len)))
		return err;
	err = mb_dsconfig_parse(ds, text, len, path);
	free(text);
	return err;
}

void mb_dsconfig_release(struct mb_dsconfig *ds)
{
	free(ds->unused);
	ds->unused = NULL;
	ds->nsettings = ds->nunused = 0;
}

/*
 * mb_ledger: device allocations with their tags, current and peak bytes.
 */
#include "mb_ledger.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mb_err.h"
#include "mb_num.h"

void mb_ledger_init(struct mb_ledger *l, const struct mb_cl *cl, uint64_t limit_bytes)
{
	memset(l, 0, sizeof(*l));
	l->cl = cl;
	l->limit_bytes = limit_bytes;
	l->phase = -1;
}

/* Remember the largest live buffers, largest first: at each new peak. */
static void snapshot_top(struct mb_ledger *l)
{
	const struct mb_ledger_entry *e;
	size_t i, j;

	l->ntop = 0;
	for (i = 0; i < l->nlive; i++) {
		e = &l->live[i];
		if (l->ntop < MB_LEDGER_TOP)
			j = l->ntop++;
		else if (e->bytes > l->top[MB_LEDGER_TOP - 1].bytes)
			j = MB_LEDGER_TOP - 1;
		else
			continue;
		for (; j > 0 && l->top[j - 1].bytes < e->bytes; j--)
			l->top[j] = l->top[j - 1];
		l->top[j] = *e;
		l->top[j].mem = NULL; /* a record, not a handle */
	}
}

/* What makes the buffer TAG smaller, by its prefix: "" where no option does. */
static const char *remedy(const char *tag)
{
	static const struct {
		const char *prefix, *remedy;
	} remedies[] = {
		{ "params.bf16", "; the bf16 params stay on the device all run: fewer --layers, or "
				 "a device with more memory" },
		{ "bwd.bucket", "; a smaller --reduce-bucket-size makes the bucket smaller" },
		{ "bwd.norm", "; a smaller --reduce-bucket-size makes the bucket smaller" },
		{ "bwd.grad_", "; the largest parameter sizes it, or a smaller "
			       "--reduce-bucket-size where that is smaller" },
		{ "ds.ipg_bucket", "; a smaller --reduce-bucket-size makes the bucket smaller" },
		{ "ds.temp_grad_buffer", "; the largest parameter sizes it: a device with more "
					 "memory" },
		{ "fwd.", "; a shorter --seq, a smaller --micro-batch, or --fwd-bwd off" },
		{ "bwd.", "; a shorter --seq, a smaller --micro-batch, or --fwd-bwd off" },
		{ "ns.workspace", "; the largest matrix sizes it: another --ns-method (gram and "
				  "standard differ), or a device with more memory" },
		{ "apply.batch", "; a smaller --gather-budget makes the batches smaller" },
		{ "apply.subgroup", "; a smaller --sub-group-size makes the sub-groups smaller" },
		{ "apply.update", "; a smaller --gather-budget (ZeRO-1/2) or --sub-group-size "
				  "(ZeRO-3)" },
	};
	size_t i;

	for (i = 0; i < sizeof(remedies) / sizeof(remedies[0]); i++)
		if (!strncmp(tag, remedies[i].prefix, strlen(remedies[i].prefix)))
			return remedies[i].remedy;
	return "";
}

static int refuse(const struct mb_ledger *l, uint64_t bytes, const char *tag, const char *why)
{
	char a[32], b[32];

	/* out of device memory as data (mb_err_kind): the words are for people */
	return mb_fail_kind(
		MB_KIND_DEVICE_MEMORY,
		"clCreateBuffer failed on '%s' (%s, %s): CL_MEM_OBJECT_ALLOCATION_FAILURE "
		"(%s; %s in use%s)",
		l->cl->info.name, tag, mb_fmt_bytes_iec(a, sizeof(a), bytes), why,
		mb_fmt_bytes_iec(b, sizeof(b), l->current_bytes), remedy(tag));
}

static bool is_clblast(const char *tag)
{
	return !strncmp(tag, MB_LEDGER_CLBLAST, strlen(MB_LEDGER_CLBLAST));
}

/* Raise the peaks, overall and of the current phase, to what is in use now. */
static void raise_peaks(struct mb_ledger *l)
{
	if (l->own_current_bytes > l->own_peak_bytes)
		l->own_peak_bytes = l->own_current_bytes;
	if (l->phase < 0)
		return;
	if (l->current_bytes > l->phases[l->phase].peak_bytes)
		l->phases[l->phase].peak_bytes = l->current_bytes;
	if (l->own_current_bytes > l->phases[l->phase].own_peak_bytes)
		l->phases[l->phase].own_peak_bytes = l->own_current_bytes;
}

static int book(struct mb_ledger *l, uint64_t bytes, const char *tag, cl_mem mem)
{
	struct mb_ledger_entry *e;

	if (l->nlive == l->live_alloc) {
		size_t alloc = l->live_alloc ? 2 * l->live_alloc : 16;

		e = realloc(l->live, alloc * sizeof(*e));
		if (!e)
			return mb_fail("out of host memory for %zu device buffers", alloc);
		l->live = e;
		l->live_alloc = alloc;
	}
	e = &l->live[l->nlive++];
	snprintf(e->tag, sizeof(e->tag), "%s", tag);
	e->bytes = bytes;
	e->mem = mem;
	l->current_bytes += bytes;
	if (!is_clblast(tag))
		l->own_current_bytes += bytes;
	if (l->current_bytes > l->peak_bytes) {
		l->peak_bytes = l->current_bytes;
		snapshot_top(l);
	}
	raise_peaks(l);
	return 0;
}

/* A free pooled buffer of at least BYTES reserved for TAG: lent into *out. */
static bool borrow(struct mb_ledger *l, uint64_t bytes, const char *tag, cl_mem *out)
{
	size_t i;

	for (i = 0; i < l->nslots && l->pool; i++) {
		struct mb_ledger_slot *s = &l->slots[i];

		if (s->lent || l->pool[s->buffer].lent || !l->pool[s->buffer].mem ||
		    s->bytes < bytes || strcmp(s->tag, tag))
			continue;
		s->lent = l->pool[s->buffer].lent = true;
		*out = l->pool[s->buffer].mem;
		return true;
	}
	return false;
}

/* Give MEM back to the pool: true if it was a pooled buffer. */
static bool give_back(struct mb_ledger *l, cl_mem mem)
{
	size_t i;

	for (i = 0; i < l->nslots && l->pool; i++) {
		struct mb_ledger_slot *s = &l->slots[i];

		if (s->lent && l->pool[s->buffer].mem == mem) {
			s->lent = l->pool[s->buffer].lent = false;
			return true;
		}
	}
	return false;
}

int mb_ledger_alloc(struct mb_ledger *l, uint64_t bytes, const char *tag, cl_mem *out)
{
	char limit[96], most[32];
	cl_int st;
	int err;

	*out = NULL;
	if (l->limit_bytes &&
	    (bytes > l->limit_bytes || l->current_bytes > l->limit_bytes - bytes)) {
		snprintf(limit, sizeof(limit), "over the --device-mem-limit of %s",
			 mb_fmt_bytes_iec(most, sizeof(most), l->limit_bytes));
		return refuse(l, bytes, tag, limit);
	}
	if (borrow(l, bytes, tag, out)) {
		if ((err = book(l, bytes, tag, *out))) {
			give_back(l, *out);
			*out = NULL;
		}
		return err;
	}
	if (bytes > mb_cl_alloc_limit(&l->cl->info)) {
		snprintf(limit, sizeof(limit), "the device allocates at most %s at once",
			 mb_fmt_bytes_iec(most, sizeof(most), l->cl->info.max_alloc_bytes));
		return refuse(l, bytes, tag, limit);
	}
	*out = clCreateBuffer(l->cl->context, mb_cl_buffer_flags(&l->cl->info, bytes),
			      bytes ? bytes : 1, NULL, &st);
	l->device_allocs++;
	if (st == CL_MEM_OBJECT_ALLOCATION_FAILURE || st == CL_OUT_OF_RESOURCES)
		return refuse(l, bytes, tag, "the device is out of memory");
	if ((err = mb_cl_check(l->cl, st, "clCreateBuffer", "%s, %llu bytes", tag,
			       (unsigned long long)bytes)))
		return err;
	if ((err = book(l, bytes, tag, *out))) {
		clReleaseMemObject(*out);
		l->device_releases++;
		*out = NULL;
	}
	return err;
}

void mb_ledger_free(struct mb_ledger *l, cl_mem mem)
{
	size_t i;

	if (!mem)
		return;
	for (i = 0; i < l->nlive; i++) {
		if (l->live[i].mem != mem)
			continue;
		l->current_bytes -= l->live[i].bytes;
		if (!is_clblast(l->live[i].tag))
			l->own_current_bytes -= l->live[i].bytes;
		l->live[i] = l->live[--l->nlive];
		break;
	}
	if (give_back(l, mem))
		return;
	clReleaseMemObject(mem);
	l->device_releases++;
}

int mb_ledger_reserve(struct mb_ledger *l, unsigned epoch, const char *tag, uint64_t bytes,
		      unsigned count, const char *knob)
{
	struct mb_ledger_slot *s;
	unsigned i;

	if (l->pool)
		return mb_fail("the device buffer pool is made: '%s' cannot be reserved now", tag);
	s = realloc(l->slots, (l->nslots + count) * sizeof(*s));
	if (!s)
		return mb_fail("out of host memory reserving %u device buffers", count);
	l->slots = s;
	for (i = 0; i < count; i++) {
		s = &l->slots[l->nslots++];
		memset(s, 0, sizeof(*s));
		snprintf(s->tag, sizeof(s->tag), "%s", tag);
		s->epoch = epoch;
		s->bytes = bytes;
		s->knob = knob;
	}
	return 0;
}

/* Slots by epoch, then largest first (the order the buffers are shared in). */
static int cmp_slot(const void *x, const void *y)
{
	const struct mb_ledger_slot *a = x, *b = y;

	if (a->epoch != b->epoch)
		return a->epoch < b->epoch ? -1 : 1;
	return (a->bytes < b->bytes) - (a->bytes > b->bytes);
}

int mb_ledger_pool_make(struct mb_ledger *l)
{
	const struct mb_cl *cl = l->cl;
	size_t i, k = 0, n = 0, *who;
	char a[32], b[32];
	cl_int st;
	int err = 0;

	qsort(l->slots, l->nslots, sizeof(*l->slots), cmp_slot);
	/* the k-th largest slot of each epoch goes in buffer k */
	for (i = 0; i < l->nslots; i++) {
		k = i && l->slots[i].epoch == l->slots[i - 1].epoch ? k + 1 : 0;
		l->slots[i].buffer = k;
		n = k + 1 > n ? k + 1 : n;
	}
	l->pool = calloc(n ? n : 1, sizeof(*l->pool));
	who = calloc(n ? n : 1, sizeof(*who)); /* the slot that sets each buffer's size */
	if (!l->pool || !who) {
		free(who);
		return mb_fail("out of host memory for a pool of %zu device buffers", n);
	}
	l->npool = n;
	for (i = 0; i < l->nslots; i++) {
		struct mb_ledger_pooled *p = &l->pool[l->slots[i].buffer];

		if (l->slots[i].bytes > p->bytes) {
			p->bytes = l->slots[i].bytes;
			who[l->slots[i].buffer] = i;
		}
	}
	for (k = 0; k < n && !err; k++) {
		const struct mb_ledger_slot *s = &l->slots[who[k]];
		struct mb_ledger_pooled *p = &l->pool[k];

		mb_fmt_bytes_iec(a, sizeof(a), p->bytes);
		if (p->bytes > mb_cl_alloc_limit(&cl->info)) {
			err = mb_fail(
				"device buffer '%s' (%s) is larger than '%s' allocates at once "
				"(%s)%s%s",
				s->tag, a, cl->info.name,
				mb_fmt_bytes_iec(b, sizeof(b), cl->info.max_alloc_bytes),
				s->knob ? "; " : "", s->knob ? s->knob : "");
			break;
		}
		p->mem = clCreateBuffer(cl->context, mb_cl_buffer_flags(&cl->info, p->bytes),
					p->bytes ? p->bytes : 1, NULL, &st);
		l->device_allocs++;
		if (st == CL_MEM_OBJECT_ALLOCATION_FAILURE || st == CL_OUT_OF_RESOURCES)
			err = mb_fail_kind(MB_KIND_DEVICE_MEMORY,
					   "clCreateBuffer failed on '%s' (the pool's buffer for "
					   "'%s', %s): the device is out of memory",
					   cl->info.name, s->tag, a);
		else
			err = mb_cl_check(cl, st, "clCreateBuffer",
					  "the pool's buffer for '%s', %s", s->tag, a);
		if (!err)
			l->pool_bytes += p->bytes;
	}
	free(who);
	return err;
}

void mb_ledger_phase(struct mb_ledger *l, const char *name)
{
	int i;

	for (i = 0; i < l->nphases; i++)
		if (!strcmp(l->phases[i].name, name))
			break;
	if (i == l->nphases) {
		if (l->nphases == MB_LEDGER_PHASES_MAX)
			i = MB_LEDGER_PHASES_MAX - 1; /* the last slot takes the rest */
		else
			l->nphases++;
		snprintf(l->phases[i].name, sizeof(l->phases[i].name), "%s", name);
		l->phases[i].peak_bytes = l->phases[i].own_peak_bytes = 0;
	}
	l->phase = i;
	raise_peaks(l);
}

/* The index of phase NAME, or -1 if it never ran. */
static int phase_index(const struct mb_ledger *l, const char *name)
{
	int i;

	for (i = 0; i < l->nphases; i++)
		if (!strcmp(l->phases[i].name, name))
			return i;
	return -1;
}

uint64_t mb_ledger_phase_peak(const struct mb_ledger *l, const char *name)
{
	int i = phase_index(l, name);

	return i < 0 ? 0 : l->phases[i].peak_bytes;
}

uint64_t mb_ledger_phase_own_peak(const struct mb_ledger *l, const char *name)
{
	int i = phase_index(l, name);

	return i < 0 ? 0 : l->phases[i].own_peak_bytes;
}

void mb_ledger_release(struct mb_ledger *l)
{
	size_t i;

	while (l->nlive)
		mb_ledger_free(l, l->live[l->nlive - 1].mem);
	free(l->live);
	l->live = NULL;
	l->live_alloc = 0;
	for (i = 0; i < l->npool; i++)
		if (l->pool[i].mem) {
			clReleaseMemObject(l->pool[i].mem);
			l->device_releases++;
		}
	free(l->pool);
	free(l->slots);
	l->pool = NULL;
	l->slots = NULL;
	l->npool = l->nslots = 0;
	l->pool_bytes = 0;
}

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

static int refuse(const struct mb_ledger *l, uint64_t bytes, const char *tag, const char *why)
{
	char a[32], b[32];

	return mb_fail("clCreateBuffer failed on '%s' (%s, %s): CL_MEM_OBJECT_ALLOCATION_FAILURE "
		       "(%s; %s in use)",
		       l->cl->info.name, tag, mb_fmt_bytes_iec(a, sizeof(a), bytes), why,
		       mb_fmt_bytes_iec(b, sizeof(b), l->current_bytes));
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
	if (bytes > l->cl->info.max_alloc_bytes) {
		snprintf(limit, sizeof(limit), "the device allocates at most %s at once",
			 mb_fmt_bytes_iec(most, sizeof(most), l->cl->info.max_alloc_bytes));
		return refuse(l, bytes, tag, limit);
	}
	*out = clCreateBuffer(l->cl->context, CL_MEM_READ_WRITE, bytes ? bytes : 1, NULL, &st);
	if (st == CL_MEM_OBJECT_ALLOCATION_FAILURE || st == CL_OUT_OF_RESOURCES)
		return refuse(l, bytes, tag, "the device is out of memory");
	if ((err = mb_cl_check(l->cl, st, "clCreateBuffer", "%s, %llu bytes", tag,
			       (unsigned long long)bytes)))
		return err;
	if ((err = book(l, bytes, tag, *out))) {
		clReleaseMemObject(*out);
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
	clReleaseMemObject(mem);
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
	while (l->nlive)
		mb_ledger_free(l, l->live[l->nlive - 1].mem);
	free(l->live);
	l->live = NULL;
	l->live_alloc = 0;
}

/*
 * mb_race: vector clocks over the host and the queues, and each buffer's
 * accesses not yet seen by the host (see mb_race.h).
 */
#include "mb_race.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mb_err.h"

struct clock {
	uint64_t t[MB_RACE_NPARTIES];
};

/* One access that some party may not have seen yet. */
struct record {
	uint64_t lo, hi; /* bytes [lo, hi) */
	uint64_t seq;	 /* its operation's place on its party */
	unsigned party;
	bool write;
	char op[160]; /* the operation as a report names it */
};

struct buffer {
	const void *key;
	char name[48];
	struct record *rec;
	size_t n, alloc;
};

/* An event: its party's clock when it was made, and that party. */
struct event {
	struct clock at;
	unsigned party;
};

struct mb_race {
	struct clock vc[MB_RACE_NPARTIES];  /* what each party has seen of each */
	uint64_t flushed[MB_RACE_NPARTIES]; /* each queue's commands submitted, up to */
	struct event *snap;		    /* each event id's */
	size_t nsnap, snap_alloc;
	struct buffer *buf;
	size_t nbuf, buf_alloc;
	struct record cur; /* the operation begun last (its span unused) */
	uint64_t checked;
	bool found; /* a hazard reported: the step fails, and the first report stands */
};

static const char host_keys[16];

const void *mb_race_host_key(unsigned b)
{
	return &host_keys[b < sizeof(host_keys) ? b : 0];
}

static const char *party_name(unsigned p)
{
	static const char *const names[MB_RACE_NPARTIES] = { "compute queue", "copy queue",
							     "prefetch queue", "host" };

	return p < MB_RACE_NPARTIES ? names[p] : "?";
}

/* Grow *V (of *ALLOC elements of SIZE bytes) to hold N + 1. */
static int grow(void **v, size_t *alloc, size_t n, size_t size)
{
	void *p;
	size_t a;

	if (n < *alloc)
		return 0;
	a = *alloc ? 2 * *alloc : 16;
	if (!(p = realloc(*v, a * size)))
		return mb_fail("out of host memory for the race checker's %zu entries", a);
	*v = p;
	*alloc = a;
	return 0;
}

static void join(struct clock *into, const struct clock *from)
{
	unsigned i;

	for (i = 0; i < MB_RACE_NPARTIES; i++)
		if (from->t[i] > into->t[i])
			into->t[i] = from->t[i];
}

int mb_race_new(struct mb_race **out)
{
	if (!(*out = calloc(1, sizeof(**out))))
		return mb_fail("out of host memory for the race checker");
	return 0;
}

void mb_race_free(struct mb_race *r)
{
	size_t i;

	if (!r)
		return;
	for (i = 0; i < r->nbuf; i++)
		free(r->buf[i].rec);
	free(r->buf);
	free(r->snap);
	free(r);
}

static struct buffer *find(struct mb_race *r, const void *key)
{
	size_t i;

	for (i = 0; i < r->nbuf; i++)
		if (r->buf[i].key == key)
			return &r->buf[i];
	return NULL;
}

static struct buffer *find_or_add(struct mb_race *r, const void *key)
{
	struct buffer *b = find(r, key);

	if (b)
		return b;
	if (grow((void **)&r->buf, &r->buf_alloc, r->nbuf, sizeof(*r->buf)))
		return NULL;
	b = &r->buf[r->nbuf++];
	memset(b, 0, sizeof(*b));
	b->key = key;
	snprintf(b->name, sizeof(b->name), "a buffer at %p", key);
	return b;
}

void mb_race_name(struct mb_race *r, const void *key, const char *name)
{
	struct buffer *b = find_or_add(r, key);

	if (b)
		snprintf(b->name, sizeof(b->name), "%s", name);
}

int mb_race_begin(struct mb_race *r, unsigned p, const struct mb_race_op *op)
{
	struct record *c = &r->cur;

	if (p >= MB_RACE_NPARTIES)
		return mb_fail("the race checker has no party %u", p);
	/* a queue's command is enqueued by the host: after all the host has seen */
	if (p != MB_RACE_HOST)
		join(&r->vc[p], &r->vc[MB_RACE_HOST]);
	c->party = p;
	c->seq = ++r->vc[p].t[p];
	if (op->phase && op->unit)
		snprintf(c->op, sizeof(c->op), "%s on the %s (phase %s, %s)", op->op, party_name(p),
			 op->phase, op->unit);
	else if (op->phase || op->unit)
		snprintf(c->op, sizeof(c->op), "%s on the %s (%s%s)", op->op, party_name(p),
			 op->phase ? "phase " : "", op->phase ? op->phase : op->unit);
	else
		snprintf(c->op, sizeof(c->op), "%s on the %s", op->op, party_name(p));
	return 0;
}

static void span_text(char *buf, size_t len, uint64_t lo, uint64_t hi)
{
	if (hi == UINT64_MAX)
		snprintf(buf, len, "bytes %" PRIu64 " to the end", lo);
	else
		snprintf(buf, len, "bytes %" PRIu64 "-%" PRIu64, lo, hi);
}

static int hazard(const struct buffer *b, const struct record *old, const struct record *now)
{
	char a[64], c[64];

	span_text(a, sizeof(a), old->lo, old->hi);
	span_text(c, sizeof(c), now->lo, now->hi);
	return mb_fail("race on '%s': %s %s %s, then %s %s %s, with nothing ordering them", b->name,
		       old->op, old->write ? "writes" : "reads", a, now->op,
		       now->write ? "writes" : "reads", c);
}

int mb_race_access(struct mb_race *r, const void *key, uint64_t off, uint64_t bytes, bool write)
{
	const struct clock *seen = &r->vc[r->cur.party];
	struct buffer *b = find_or_add(r, key);
	struct record now = r->cur;
	size_t i;

	if (!b)
		return -MB_EFAIL;
	if (r->found)
		return 0;
	now.lo = off;
	now.hi = bytes == MB_RACE_ALL || off + bytes < off ? UINT64_MAX : off + bytes;
	now.write = write;
	if (now.hi == now.lo)
		return 0;
	r->checked++;
	for (i = 0; i < b->n;) {
		const struct record *o = &b->rec[i];

		/* the host has seen it: every access from now on comes after it */
		if (r->vc[MB_RACE_HOST].t[o->party] >= o->seq) {
			b->rec[i] = b->rec[--b->n];
			continue;
		}
		if ((o->write || write) && o->party != now.party && o->lo < now.hi &&
		    now.lo < o->hi && o->seq > seen->t[o->party]) {
			r->found = true;
			return hazard(b, o, &now);
		}
		i++;
	}
	/* the host's own accesses are seen by the host at once */
	if (now.party == MB_RACE_HOST)
		return 0;
	if (grow((void **)&b->rec, &b->alloc, b->n, sizeof(*b->rec)))
		return -MB_EFAIL;
	b->rec[b->n++] = now;
	return 0;
}

int mb_race_event(struct mb_race *r, size_t id)
{
	if (!id)
		return 0;
	while (r->nsnap < id) {
		if (grow((void **)&r->snap, &r->snap_alloc, r->nsnap, sizeof(*r->snap)))
			return -MB_EFAIL;
		memset(&r->snap[r->nsnap++], 0, sizeof(*r->snap));
	}
	r->snap[id - 1] = (struct event){ r->vc[r->cur.party], r->cur.party };
	return 0;
}

int mb_race_wait(struct mb_race *r, unsigned p, size_t id)
{
	const struct event *ev;

	if (!id || id > r->nsnap || p >= MB_RACE_NPARTIES)
		return 0;
	ev = &r->snap[id - 1];
	/* the host's wait submits what it waits for; another queue's does not */
	if (p == MB_RACE_HOST)
		mb_race_flush(r, ev->party);
	else if (ev->party != p && ev->party != MB_RACE_HOST &&
		 ev->at.t[ev->party] > r->flushed[ev->party] && !r->found) {
		r->found = true;
		return mb_fail("the %s waits for event %zu of the %s, which was never flushed: "
			       "a driver may never submit it (flush that queue first)",
			       party_name(p), id, party_name(ev->party));
	}
	join(&r->vc[p], &ev->at);
	return 0;
}

void mb_race_flush(struct mb_race *r, unsigned q)
{
	if (q < MB_RACE_HOST)
		r->flushed[q] = r->vc[q].t[q];
}

void mb_race_finish(struct mb_race *r, unsigned q)
{
	if (q >= MB_RACE_NPARTIES)
		return;
	mb_race_flush(r, q);
	join(&r->vc[MB_RACE_HOST], &r->vc[q]);
}

int mb_race_release(struct mb_race *r, const void *key, const struct mb_race_op *op)
{
	struct buffer *b;
	int err;

	if (!find(r, key))
		return 0;
	if ((err = mb_race_begin(r, MB_RACE_HOST, op)) ||
	    (err = mb_race_access(r, key, 0, MB_RACE_ALL, true)))
		return err;
	b = find(r, key);
	free(b->rec);
	*b = r->buf[--r->nbuf];
	return 0;
}

void mb_race_end_step(struct mb_race *r)
{
	r->nsnap = 0;
	r->found = false;
}

uint64_t mb_race_checked(const struct mb_race *r)
{
	return r->checked;
}

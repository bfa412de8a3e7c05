/*
 * mb_hostopt: Muon's and AdamW's host updates with the bf16 staging, and
 * the checksum of the final state.
 */
#include "mb_hostopt.h"

#include <math.h>
#include <string.h>

#include "mb_rng.h"

uint16_t mb_bf16(float x)
{
	uint32_t bits;

	memcpy(&bits, &x, sizeof(bits));
	if ((bits & 0x7fffffffu) > 0x7f800000u)
		return (uint16_t)((bits >> 16) | 0x40); /* a quiet NaN */
	bits += 0x7fffu + ((bits >> 16) & 1);
	return (uint16_t)(bits >> 16);
}

void mb_hostopt_muon(float *p, const float *u, uint16_t *staging, uint64_t n,
		     const struct mb_optim *o)
{
	const float decay = 1.0f - o->muon_lr * o->muon_wd, lr = o->muon_lr;
	int64_t i;

	if (!staging) {
#pragma omp for simd schedule(static) nowait
		for (i = 0; i < (int64_t)n; i++)
			p[i] = p[i] * decay - lr * u[i];
		return;
	}
#pragma omp for simd schedule(static) nowait
	for (i = 0; i < (int64_t)n; i++) {
		float x = p[i] * decay - lr * u[i];

		p[i] = x;
		staging[i] = mb_bf16(x);
	}
}

void mb_hostopt_cast(const float *p, uint16_t *staging, uint64_t n)
{
	int64_t i;

#pragma omp for simd schedule(static) nowait
	for (i = 0; i < (int64_t)n; i++)
		staging[i] = mb_bf16(p[i]);
}

void mb_hostopt_adamw(float *p, const float *g, float *m, float *v, uint16_t *staging, uint64_t n,
		      uint64_t t, const struct mb_optim *o)
{
	const float b1 = o->adam_beta1, b2 = o->adam_beta2, lr = o->adam_lr, eps = o->adam_eps;
	const float decay = 1.0f - o->adam_lr * o->adam_wd;
	const float bc1 = (float)(1.0 - pow(b1, (double)t)),
		    bc2 = (float)(1.0 - pow(b2, (double)t));
	int64_t i;

	if (!staging) {
#pragma omp for simd schedule(static) nowait
		for (i = 0; i < (int64_t)n; i++) {
			float gi = g[i], mi = b1 * m[i] + (1.0f - b1) * gi;
			float vi = b2 * v[i] + (1.0f - b2) * gi * gi;

			m[i] = mi;
			v[i] = vi;
			p[i] = p[i] * decay - lr * (mi / bc1) / (sqrtf(vi / bc2) + eps);
		}
		return;
	}
#pragma omp for simd schedule(static) nowait
	for (i = 0; i < (int64_t)n; i++) {
		float gi = g[i], mi = b1 * m[i] + (1.0f - b1) * gi;
		float vi = b2 * v[i] + (1.0f - b2) * gi * gi;
		float x = p[i] * decay - lr * (mi / bc1) / (sqrtf(vi / bc2) + eps);

		m[i] = mi;
		v[i] = vi;
		p[i] = x;
		staging[i] = mb_bf16(x);
	}
}

/* Where a hash is in a list of spans: span K, byte AT of it. */
struct cursor {
	const struct mb_span *s;
	size_t n, k;
	uint64_t at;
};

/* Copy LEN bytes from C to DST (NULL: skip them), across span edges. */
static void take(struct cursor *c, unsigned char *dst, uint64_t len)
{
	while (len) {
		uint64_t left = c->s[c->k].bytes - c->at, m = len < left ? len : left;

		if (dst) {
			memcpy(dst, (const unsigned char *)c->s[c->k].ptr + c->at, m);
			dst += m;
		}
		c->at += m;
		len -= m;
		if (c->at == c->s[c->k].bytes && c->k + 1 < c->n) {
			c->k++;
			c->at = 0;
		}
	}
}

/* BYTES from C, 8 at a time and the rest one at a time, each mixed with its offset. */
static uint64_t hash_bytes(struct cursor *c, uint64_t bytes, uint64_t h)
{
	unsigned char b[8];
	uint64_t i, w;

	for (i = 0; i + 8 <= bytes; i += 8) {
		if (c->s[c->k].bytes - c->at >= 8) { /* the usual case: within one span */
			memcpy(&w, (const unsigned char *)c->s[c->k].ptr + c->at, 8);
			take(c, NULL, 8);
		} else {
			take(c, b, 8);
			memcpy(&w, b, 8);
		}
		h = mb_mix64(h ^ w) + i;
	}
	for (; i < bytes; i++) {
		take(c, b, 1);
		h = mb_mix64(h ^ b[0]) + i;
	}
	return h;
}

#define CHUNK	   (16u << 20)
#define CHUNKS_MAX 4096

uint64_t mb_checksum_spans(const struct mb_span *spans, size_t nspans, uint64_t h)
{
	uint64_t hs[CHUNKS_MAX], chunk = CHUNK, bytes = 0;
	int64_t i, n;
	size_t k;

	for (k = 0; k < nspans; k++)
		bytes += spans[k].bytes;
	/* chunks hashed in parallel, then combined in order */
	while ((bytes + chunk - 1) / chunk > CHUNKS_MAX)
		chunk *= 2;
	n = (int64_t)((bytes + chunk - 1) / chunk);
#pragma omp parallel for schedule(static)
	for (i = 0; i < n; i++) {
		uint64_t off = (uint64_t)i * chunk;
		struct cursor c = { spans, nspans, 0, 0 };

		while (off >= c.s[c.k].bytes - c.at && c.k + 1 < c.n) { /* to the chunk's start */
			off -= c.s[c.k].bytes - c.at;
			c.k++;
		}
		c.at = off;
		hs[i] = hash_bytes(&c,
				   bytes - (uint64_t)i * chunk < chunk ? bytes - (uint64_t)i * chunk
								       : chunk,
				   0);
	}
	for (i = 0; i < n; i++)
		h = mb_mix64(h ^ hs[i]) + (uint64_t)i;
	return mb_mix64(h ^ bytes);
}

uint64_t mb_checksum(const void *p, uint64_t bytes, uint64_t h)
{
	struct mb_span s = { p, bytes };

	return mb_checksum_spans(&s, 1, h);
}

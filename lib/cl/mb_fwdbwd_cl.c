/*
 * mb_fwdbwd_cl: the GEMMs of a checkpointed forward and backward on the model's
 * own shapes.
 *
 * CLBlast passes sizes, leading dimensions and offsets to its kernels as
 * int, so a GEMM whose operands reach 2^31 elements (the output head's
 * tokens x vocabulary, with many tokens) would index past them. Such a GEMM
 * runs in chunks of tokens (mb_fwdbwd_chunk_tokens); since the pass's
 * values are zeros and never read, every chunk works on the first rows of
 * the token-major buffers: the same work, at offsets an int can hold.
 */
#include "mb_fwdbwd_cl.h"

#include <string.h>

#include <clblast_c.h>

#include "mb_clock.h"
#include "mb_err.h"

/* each dimension of a chunk's operands is rounded up to this, for CLBlast's padding
 * (its work-group tiles are at most 128 wide) */
#define CHUNK_PAD 256

/* The device buffers of the pass, and its sizes. */
struct pass {
	const struct mb_model *m;
	const struct mb_cl *cl;
	struct mb_ledger *ledger;
	uint64_t t; /* tokens */
	uint64_t hidden, max_rows, max_cols, max_numel;
	const struct mb_param *head;
	cl_mem x, y, w, dx, dy, dw, ckpt, temp;
	size_t temp_bytes;
};

static bool in_pass(const struct mb_param *p)
{
	return p->ndim == 2 && p->layer >= 0;
}

/* Round N up to a multiple of CHUNK_PAD, saturating. */
static uint64_t padded(uint64_t n)
{
	return n > UINT64_MAX - CHUNK_PAD ? UINT64_MAX
					  : (n + CHUNK_PAD - 1) / CHUNK_PAD * CHUNK_PAD;
}

uint64_t mb_fwdbwd_chunk_tokens(uint64_t tokens, uint64_t rows, uint64_t cols)
{
	unsigned __int128 r = padded(rows), c = padded(cols), room, most;

	/* the weight, then per (padded) token a row of the input and of the output */
	if (r * c >= MB_FWDBWD_GEMM_ELEMENTS)
		return 0;
	room = MB_FWDBWD_GEMM_ELEMENTS - 1 - r * c;
	if (padded(tokens) <= room / (r + c))
		return tokens;
	most = room / (r + c) / CHUNK_PAD * CHUNK_PAD;
	return (uint64_t)most;
}

/* Row-major C(m x n) = A(m x k) op(B) + BETA C, op(B) = Bᵀ (B is n x k) or B (k x n). */
static int gemm(struct pass *p, const char *what, bool a_t, bool b_t, uint64_t m, uint64_t n,
		uint64_t k, cl_mem a, cl_mem b, float beta, cl_mem c)
{
	cl_command_queue q = p->cl->compute;
	int st;

	st = CLBlastSgemmWithTempBuffer(CLBlastLayoutRowMajor,
					a_t ? CLBlastTransposeYes : CLBlastTransposeNo,
					b_t ? CLBlastTransposeYes : CLBlastTransposeNo, m, n, k,
					1.0f, a, 0, a_t ? m : k, b, 0, b_t ? k : n, beta, c, 0, n,
					&q, NULL, p->temp);
	return mb_clblast_check(p->cl, st, "CLBlastSgemm", "%s %llux%llux%llu GEMM", what,
				(unsigned long long)m, (unsigned long long)n,
				(unsigned long long)k);
}

/* The three GEMMs of a linear layer. */
enum linear { FORWARD, BACKWARD_DX, BACKWARD_DW };

/*
 * GEMM G of linear layer W over TOKENS tokens, into M x N x K as gemm() takes
 * them: the tokens are M, or K for dW.
 */
static void linear_shape(enum linear g, const struct mb_param *w, uint64_t tokens, uint64_t *m,
			 uint64_t *n, uint64_t *k)
{
	*m = g == BACKWARD_DW ? w->rows : tokens;
	*n = g == FORWARD ? w->rows : w->cols;
	*k = g == FORWARD ? w->cols : g == BACKWARD_DX ? w->rows : tokens;
}

/* The tokens one GEMM of W takes at once, into *CHUNK; a weight too large for any is refused. */
static int chunk_of(const struct pass *p, const struct mb_param *w, uint64_t *chunk)
{
	*chunk = mb_fwdbwd_chunk_tokens(p->t, w->rows, w->cols);
	if (*chunk)
		return 0;
	return mb_fail("the forward/backward cannot run '%s' (%llux%llu): CLBlast indexes a "
		       "GEMM's operands with int, and with as few as %u tokens they reach 2^31 "
		       "elements (--fwd-bwd off leaves the pass out)",
		       w->name, (unsigned long long)w->rows, (unsigned long long)w->cols,
		       CHUNK_PAD);
}

/*
 * GEMM G of W over the pass's tokens, in chunks whose operands CLBlast can
 * index (mb_fwdbwd_chunk_tokens); dW's chunks add up.
 */
static int linear(struct pass *p, enum linear g, const struct mb_param *w)
{
	static const char *const what[] = { "forward", "backward dX", "backward dW" };
	uint64_t chunk, done, len, m, n, k;
	int err = chunk_of(p, w, &chunk);

	for (done = 0; done < p->t && !err; done += len) {
		len = p->t - done < chunk ? p->t - done : chunk;
		linear_shape(g, w, len, &m, &n, &k);
		err = g == FORWARD ? gemm(p, what[g], false, true, m, n, k, p->x, p->w, 0.0f, p->y)
		      : g == BACKWARD_DX
			      ? gemm(p, what[g], false, false, m, n, k, p->dy, p->w, 0.0f, p->dx)
			      : gemm(p, what[g], true, false, m, n, k, p->dy, p->x,
				     done ? 1.0f : 0.0f, p->dw);
	}
	return err;
}

static int temp_for(struct pass *p, bool a_t, bool b_t, uint64_t m, uint64_t n, uint64_t k)
{
	cl_command_queue q = p->cl->compute;
	size_t bytes = 0;
	int st;

	st = CLBlastSGemmTempBufferSize(CLBlastLayoutRowMajor,
					a_t ? CLBlastTransposeYes : CLBlastTransposeNo,
					b_t ? CLBlastTransposeYes : CLBlastTransposeNo, m, n, k, 0,
					a_t ? m : k, 0, b_t ? k : n, 0, n, &q, &bytes);
	if (bytes > p->temp_bytes)
		p->temp_bytes = bytes;
	return mb_clblast_check(p->cl, st, "CLBlastSGemmTempBufferSize", "%llux%llux%llu",
				(unsigned long long)m, (unsigned long long)n,
				(unsigned long long)k);
}

/*
 * The three GEMMs of a linear layer W (r x c), for the temporary's size, at
 * the tokens of its first chunk; a layer that cannot be cut small enough is
 * refused.
 */
static int temps_of(struct pass *p, const struct mb_param *w)
{
	uint64_t chunk, m, n, k;
	int err;

	if ((err = chunk_of(p, w, &chunk)))
		return err;
	linear_shape(FORWARD, w, chunk, &m, &n, &k);
	if ((err = temp_for(p, false, true, m, n, k)))
		return err;
	linear_shape(BACKWARD_DX, w, chunk, &m, &n, &k);
	if ((err = temp_for(p, false, false, m, n, k)))
		return err;
	linear_shape(BACKWARD_DW, w, chunk, &m, &n, &k);
	return temp_for(p, true, false, m, n, k);
}

/* The pass's sizes; with TEMPS, CLBlast's temporary bytes too (that needs the device). */
static int measure(struct pass *p, bool temps)
{
	const struct mb_model *m = p->m;
	size_t i;
	int err;

	p->hidden = 0;
	for (i = 0; i < m->nparams; i++) {
		const struct mb_param *w = &m->params[i];

		if (w->ndim == 2 && w->layer < 0 &&
		    (strstr(w->name, "lm_head") || (!p->head && strstr(w->name, "embed"))))
			p->head = w;
		if (!in_pass(w) && w != p->head)
			continue;
		if (w->rows > p->max_rows)
			p->max_rows = w->rows;
		if (w->cols > p->max_cols)
			p->max_cols = w->cols;
		if (mb_param_numel(w) > p->max_numel)
			p->max_numel = mb_param_numel(w);
		if (in_pass(w) && (!p->hidden || w->cols < p->hidden))
			p->hidden = w->cols;
		if (temps && (err = temps_of(p, w)))
			return err;
	}
	if (temps && p->head && (err = temps_of(p, p->head)))
		return err;
	return 0;
}

/* Bytes of a buffer of FLOATS floats (at least one), saturated at UINT64_MAX. */
static uint64_t floats_bytes(uint64_t floats)
{
	uint64_t bytes;

	return __builtin_mul_overflow(floats ? floats : 1, 4, &bytes) ? UINT64_MAX : bytes;
}

static uint64_t product(uint64_t a, uint64_t b)
{
	uint64_t c;

	return __builtin_mul_overflow(a, b, &c) ? UINT64_MAX : c;
}

/* One device buffer of the pass: its ledger tag, its size, where it goes. */
struct pass_buffer {
	const char *tag;
	uint64_t bytes;
	cl_mem *mem;
	bool backward; /* allocated when the backward starts (else the forward) */
};

#define PASS_BUFFERS 8

/* Every buffer of the pass (CLBlast's temporary last), from its measured sizes. */
static size_t pass_buffers(struct pass *p, struct pass_buffer *b)
{
	size_t n = 0;

	b[n++] = (struct pass_buffer){ "fwd.input", floats_bytes(product(p->t, p->max_cols)), &p->x,
				       false };
	b[n++] = (struct pass_buffer){ "fwd.output", floats_bytes(product(p->t, p->max_rows)),
				       &p->y, false };
	b[n++] = (struct pass_buffer){ "fwd.weight", floats_bytes(p->max_numel), &p->w, false };
	b[n++] =
		(struct pass_buffer){ "fwd.checkpoints",
				      floats_bytes(product(p->m->layers, product(p->t, p->hidden))),
				      &p->ckpt, false };
	b[n++] = (struct pass_buffer){ "bwd.grad_output", floats_bytes(product(p->t, p->max_rows)),
				       &p->dy, true };
	b[n++] = (struct pass_buffer){ "bwd.grad_input", floats_bytes(product(p->t, p->max_cols)),
				       &p->dx, true };
	b[n++] =
		(struct pass_buffer){ "bwd.grad_weight", floats_bytes(p->max_numel), &p->dw, true };
	if (p->temp_bytes)
		b[n++] = (struct pass_buffer){ "clblast.fwd.temp", p->temp_bytes, &p->temp, false };
	return n;
}

/* Allocate the buffers of the forward (BACKWARD false) or of the backward. */
static int alloc_buffers(struct pass *p, bool backward)
{
	struct pass_buffer b[PASS_BUFFERS];
	size_t i, n = pass_buffers(p, b);
	int err;

	for (i = 0; i < n; i++)
		if (b[i].backward == backward &&
		    (err = mb_ledger_alloc(p->ledger, b[i].bytes, b[i].tag, b[i].mem)))
			return err;
	return 0;
}

/* Zero W (its contents do not matter, but must be defined). */
static int zero(struct pass *p, cl_mem buf, uint64_t floats)
{
	return mb_cl_zero(p->cl, p->cl->compute, buf, 0, 4 * floats,
			  "the forward/backward's zeros");
}

/* Forward of every matrix of layer L (or of the head when L < 0). */
static int forward_layer(struct pass *p, int l)
{
	const struct mb_model *m = p->m;
	size_t i;
	int err;

	for (i = 0; i < m->nparams; i++) {
		const struct mb_param *w = &m->params[i];

		if (l < 0 ? w != p->head : !(in_pass(w) && w->layer == l))
			continue;
		if ((err = linear(p, FORWARD, w)))
			return err;
	}
	return 0;
}

static int backward_layer(struct pass *p, int l)
{
	const struct mb_model *m = p->m;
	size_t i;
	int err;

	for (i = m->nparams; i-- > 0;) {
		const struct mb_param *w = &m->params[i];

		if (l < 0 ? w != p->head : !(in_pass(w) && w->layer == l))
			continue;
		if ((err = linear(p, BACKWARD_DX, w)) || (err = linear(p, BACKWARD_DW, w)))
			return err;
	}
	return 0;
}

static int checkpoint(struct pass *p, unsigned l, bool save)
{
	size_t bytes = 4 * p->t * p->hidden, off = (size_t)l * bytes;
	cl_int st;

	st = save ? clEnqueueCopyBuffer(p->cl->compute, p->x, p->ckpt, 0, off, bytes, 0, NULL, NULL)
		  : clEnqueueCopyBuffer(p->cl->compute, p->ckpt, p->x, off, 0, bytes, 0, NULL,
					NULL);
	return mb_cl_check(p->cl, st, "clEnqueueCopyBuffer", "checkpoint of layer %u", l);
}

static int forward(struct pass *p)
{
	unsigned l;
	int err;

	mb_ledger_phase(p->ledger, "forward");
	if ((err = alloc_buffers(p, false)) || (err = zero(p, p->x, p->t * p->max_cols)) ||
	    (err = zero(p, p->w, p->max_numel)))
		return err;
	for (l = 0; l < p->m->layers; l++)
		if ((err = checkpoint(p, l, true)) || (err = forward_layer(p, (int)l)))
			return err;
	if (p->head && (err = forward_layer(p, -1)))
		return err;
	return mb_cl_check(p->cl, clFinish(p->cl->compute), "clFinish", "forward");
}

static int stage_done(const struct mb_fwdbwd_hook *hook, unsigned stage)
{
	return hook ? hook->stage_done(hook->arg, stage) : 0;
}

static int backward(struct pass *p, const struct mb_fwdbwd_hook *hook)
{
	unsigned l;
	int err;

	mb_ledger_phase(p->ledger, "backward");
	if ((err = alloc_buffers(p, true)) || (err = zero(p, p->dy, p->t * p->max_rows)))
		return err;
	if ((p->head && (err = backward_layer(p, -1))) || (err = stage_done(hook, p->m->layers)))
		return err;
	for (l = p->m->layers; l-- > 0;)
		if ((err = checkpoint(p, l, false)) || (err = forward_layer(p, (int)l)) ||
		    (err = backward_layer(p, (int)l)) || (err = stage_done(hook, l)))
			return err;
	return mb_cl_check(p->cl, clFinish(p->cl->compute), "clFinish", "backward");
}

int mb_fwdbwd_run(const struct mb_model *m, uint64_t tokens, const struct mb_cl *cl,
		  struct mb_ledger *ledger, const struct mb_fwdbwd_hook *hook, double *forward_s,
		  double *backward_s)
{
	struct pass p = { .m = m, .cl = cl, .ledger = ledger, .t = tokens };
	cl_mem *bufs[] = { &p.x, &p.y, &p.w, &p.dx, &p.dy, &p.dw, &p.ckpt, &p.temp };
	double t0 = mb_now_s(), t1 = t0;
	size_t i;
	int err;

	*forward_s = *backward_s = 0;
	if (!(err = measure(&p, true)) && !(err = forward(&p))) {
		t1 = mb_now_s();
		*forward_s = t1 - t0;
		if (!(err = backward(&p, hook)))
			*backward_s = mb_now_s() - t1;
	}
	if (err)
		clFinish(cl->compute);
	for (i = 0; i < sizeof(bufs) / sizeof(bufs[0]); i++)
		mb_ledger_free(ledger, *bufs[i]);
	return err;
}

int mb_fwdbwd_reserve(const struct mb_model *m, uint64_t tokens, const struct mb_cl *cl,
		      struct mb_ledger *ledger, unsigned epoch)
{
	struct pass p = { .m = m, .cl = cl, .ledger = ledger, .t = tokens };
	struct pass_buffer b[PASS_BUFFERS];
	size_t i, n;
	int err;

	if ((err = measure(&p, true)))
		return err;
	n = pass_buffers(&p, b);
	for (i = 0; i < n; i++)
		if ((err = mb_ledger_reserve(
			     ledger, epoch, b[i].tag, b[i].bytes, 1,
			     "a shorter --seq or a smaller --micro-batch needs less")))
			return err;
	return 0;
}

int mb_fwdbwd_temp_bytes(const struct mb_model *m, uint64_t tokens, const struct mb_cl *cl,
			 uint64_t *bytes)
{
	struct pass p = { .m = m, .cl = cl, .t = tokens };
	int err = measure(&p, true);

	*bytes = err ? 0 : p.temp_bytes;
	return err;
}

uint64_t mb_fwdbwd_bytes(const struct mb_model *m, uint64_t tokens, uint64_t *largest,
			 const char **largest_tag, uint64_t *forward)
{
	struct pass p = { .m = m, .t = tokens };
	struct pass_buffer b[PASS_BUFFERS];
	uint64_t sum = 0, fwd = 0;
	size_t i, n;

	(void)measure(&p, false); /* without the temporaries it cannot fail */
	n = pass_buffers(&p, b);
	*largest = 0;
	*largest_tag = b[0].tag;
	for (i = 0; i < n; i++) {
		if (!b[i].backward && __builtin_add_overflow(fwd, b[i].bytes, &fwd))
			fwd = UINT64_MAX;
		if (__builtin_add_overflow(sum, b[i].bytes, &sum))
			sum = UINT64_MAX;
		if (b[i].bytes > *largest) {
			*largest = b[i].bytes;
			*largest_tag = b[i].tag;
		}
	}
	if (forward)
		*forward = fwd;
	return sum;
}

/* The output head: lm_head, else the tied embedding (NULL: none), as measure() finds it. */
static const struct mb_param *head_of(const struct mb_model *m)
{
	const struct mb_param *head = NULL;
	size_t i;

	for (i = 0; i < m->nparams; i++) {
		const struct mb_param *w = &m->params[i];

		if (w->ndim == 2 && w->layer < 0 &&
		    (strstr(w->name, "lm_head") || (!head && strstr(w->name, "embed"))))
			head = w;
	}
	return head;
}

static double gemm_flops(uint64_t tokens, const struct mb_param *w)
{
	return 2.0 * (double)tokens * (double)w->rows * (double)w->cols;
}

void mb_fwdbwd_flops(const struct mb_model *m, uint64_t tokens, double *forward, double *backward,
		     size_t *nforward, size_t *nbackward)
{
	const struct mb_param *head = head_of(m);
	size_t i;

	*forward = *backward = 0;
	*nforward = *nbackward = 0;
	for (i = 0; i < m->nparams; i++) {
		const struct mb_param *w = &m->params[i];

		if (!in_pass(w))
			continue;
		*forward += gemm_flops(tokens, w);
		*backward += 3 * gemm_flops(tokens, w); /* the forward again, dX, dW */
		*nforward += 1;
		*nbackward += 3;
	}
	if (head) {
		*forward += gemm_flops(tokens, head);
		*backward += 2 * gemm_flops(tokens, head);
		*nforward += 1;
		*nbackward += 2;
	}
}

void mb_fwdbwd_stage_flops(const struct mb_model *m, uint64_t tokens, unsigned stage, double *flops,
			   size_t *ngemms)
{
	const struct mb_param *head = head_of(m);
	size_t i;

	*flops = 0;
	*ngemms = 0;
	if (stage >= m->layers) {
		if (head) {
			*flops = 2 * gemm_flops(tokens, head);
			*ngemms = 2;
		}
		return;
	}
	for (i = 0; i < m->nparams; i++) {
		const struct mb_param *w = &m->params[i];

		if (!in_pass(w) || w->layer != (int)stage)
			continue;
		*flops += 3 * gemm_flops(tokens, w);
		*ngemms += 3;
	}
}

/*
 * plan: print what a run would allocate, copy and compute (mb_plan) as
 * Markdown tables, one CSV row or a JSON object. The CSV columns and the
 * JSON keys come from one list of fields.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "mb_err.h"
#include "mb_num.h"
#include "mb_plan.h"
#include "mb_variant.h"
#include "print.h"
#include "setup.h"

struct field {
	const char *key;
	uint64_t value;
};

#define NFIELDS_MAX 64

static size_t plan_fields(const struct mb_model *m, const struct mb_plan *p, struct field *f)
{
	const struct mb_plan_group *big = p->ngroups ? &p->groups[p->largest_group] : NULL;
	size_t n = 0;

#define F(k, v) f[n++] = (struct field){ k, (uint64_t)(v) }
	F("layers", m->layers);
	F("stage", p->set.stage);
	F("world_size", p->set.world_size);
	F("rank", p->set.rank);
	F("gather_budget_bytes", p->set.gather_budget_bytes);
	F("sub_group_size_elems", p->set.sub_group_size);
	F("tensors_total", m->nparams);
	F("tensors_muon", m->nparams_muon);
	F("params_total", m->numel_total);
	F("params_muon", m->numel_muon);
	F("params_adamw", m->numel_adamw);
	F("rank_params", p->local_numel);
	F("rank_params_muon", p->local_muon);
	F("rank_params_adamw", p->local_adamw);
	F("host_master_bytes", p->host_bytes[MB_HOST_MASTER]);
	F("host_grads_bytes", p->host_bytes[MB_HOST_GRADS]);
	F("host_momentum_bytes", p->host_bytes[MB_HOST_MOMENTUM]);
	F("host_adamw_bytes", p->host_bytes[MB_HOST_ADAMW]);
	F("host_staging_bytes", p->host_bytes[MB_HOST_STAGING]);
	F("host_grads_bf16_bytes", p->host_bytes[MB_HOST_GRADS_BF16]);
	F("pin_chunk_bytes", p->set.pin_chunk_bytes);
	F("host_grads_chunks", p->host_chunks[MB_HOST_GRADS]);
	F("host_momentum_chunks", p->host_chunks[MB_HOST_MOMENTUM]);
	F("host_staging_chunks", p->host_chunks[MB_HOST_STAGING]);
	F("pinned_bytes_momentum_pageable", mb_plan_pinned_bytes(p, false));
	F("pinned_bytes_momentum_pinned", mb_plan_pinned_bytes(p, true));
	F("groups", p->ngroups);
	F("matrices", p->matrices);
	F("largest_group_matrices", big ? big->matrices : 0);
	F("largest_group_elems", big ? big->gathered_numel : 0);
	F("largest_group_gathered_bytes", big ? mb_plan_gathered_bytes(p, big->gathered_numel) : 0);
	F("momentum_bytes_per_elem", p->momentum_bytes);
	F("bwd_d2h_bytes", p->bwd_d2h_bytes);
	F("apply_h2d_bytes", p->apply_h2d_bytes);
	F("apply_d2h_bytes", p->apply_d2h_bytes);
	F("params_h2d_bytes", p->params_h2d_bytes);
	F("bwd_h2d_bytes", p->bwd_h2d_bytes);
	F("h2d_bytes", p->bwd_h2d_bytes + p->apply_h2d_bytes + p->params_h2d_bytes);
	F("d2h_bytes", p->bwd_d2h_bytes + p->apply_d2h_bytes);
	F("ns_flops", p->ns_flops);
	F("resident_bytes", p->resident_bytes);
	F("ds_buffer_bytes", p->ds_buffer_bytes);
	F("bucket_bf16_bytes", p->bucket_bf16_bytes);
	F("piece_during_elems", p->piece_during_elems);
	F("piece_after_elems", p->piece_after_elems);
	F("peak_forward_bytes", p->peak_forward_bytes);
	F("peak_backward_bytes", p->peak_backward_bytes);
	F("ns_workspace_bytes", p->ns_workspace_bytes);
	F("apply_bytes_sync", p->apply_bytes_sync);
	F("apply_bytes_overlap", p->apply_bytes_overlap);
	F("peak_step_bytes_sync", p->peak_step_bytes_sync);
	F("peak_step_bytes_overlap", p->peak_step_bytes_overlap);
	F("apply_bytes_pipeline", p->apply_bytes_pipeline);
	F("peak_step_bytes_pipeline", p->peak_step_bytes_pipeline);
#undef F
	return n;
}

/* The plan as one record (CSV's and JSON's) into R: model, order, method, every field. */
static size_t plan_record(const struct mb_model *m, const struct mb_plan *p, const struct field *f,
			  size_t n, struct mb_field *r)
{
	size_t i, k = 0;

	r[k++] = MB_FIELD_T("model", m->name);
	r[k++] = MB_FIELD_T("source", m->source);
	r[k++] = MB_FIELD_T("param_order", mb_param_order_names[p->set.order]);
	r[k++] = MB_FIELD_T("ns_method", mb_ns_method_names[p->set.ns_method]);
	for (i = 0; i < n; i++)
		r[k++] = MB_FIELD_N(f[i].key, f[i].value);
	return k;
}

static void print_csv(const struct mb_model *m, const struct mb_plan *p, const struct field *f,
		      size_t n, bool first)
{
	struct mb_field r[NFIELDS_MAX + 4];

	mb_printer(MB_FORMAT_CSV)->record(r, plan_record(m, p, f, n, r), first);
}

/* A group's keys in plan's JSON, in the order of print_json's values. */
static const char *const group_keys[] = { "first",
					  "end",
					  "matrices",
					  "gathered_elems",
					  "rank_elems",
					  "apply_bytes_sync",
					  "apply_bytes_overlap",
					  "apply_bytes_pipeline" };
#define NGROUP_KEYS (sizeof(group_keys) / sizeof(group_keys[0]))

/* The plan as one JSON object, a member a line, with its apply order and its groups. */
static void print_json(const struct mb_model *m, const struct mb_plan *p, const struct field *f,
		       size_t n)
{
	struct mb_field r[NFIELDS_MAX + 4], gf[NGROUP_KEYS];
	size_t i, k;

	printf("{\n  ");
	mb_print_json_members(r, plan_record(m, p, f, n, r), ",\n  ");
	printf(",\n  \"apply_order\": [");
	for (i = 0; i < p->norder; i++)
		printf("%s%zu", i ? ", " : "", p->order[i]);
	printf("],\n  \"group_list\": [");
	for (i = 0; i < p->ngroups; i++) {
		const struct mb_plan_group *g = &p->groups[i];
		uint64_t v[] = { g->first,
				 g->end,
				 g->matrices,
				 g->gathered_numel,
				 g->local_numel,
				 g->apply_bytes_sync,
				 g->apply_bytes_overlap,
				 g->apply_bytes_pipeline };

		for (k = 0; k < NGROUP_KEYS; k++)
			gf[k] = MB_FIELD_N(group_keys[k], v[k]);
		printf("%s\n    {", i ? "," : "");
		mb_print_json_members(gf, NGROUP_KEYS, ", ");
		printf("}");
	}
	printf("%s]\n}\n", p->ngroups ? "\n  " : "");
}

/* Markdown's printer. */
#define MD mb_printer(MB_FORMAT_MD)

/* A row of the parameter table; TENSORS < 0 leaves that cell empty. */
static void md_count_row(const char *what, long tensors, uint64_t numel, bool first)
{
	char a[32], b[32], t[32] = "";

	if (tensors >= 0)
		snprintf(t, sizeof(t), "%ld", tensors);
	struct mb_field f[] = { MB_FIELD_T("parameters", what), MB_FIELD_TR("tensors", t),
				MB_FIELD_TR("elements", mb_fmt_grouped(a, sizeof(a), numel)),
				MB_FIELD_TR("", mb_fmt_count(b, sizeof(b), numel)) };

	MD->record(f, 4, first);
}

/*
 * A row of a table of bytes: WHAT under HEAD, then NOTE (NULL: none) under
 * NOTE_HEAD, then BYTES, exact, in units and in GiB.
 */
static void md_bytes_row(const char *head, const char *what, const char *note_head,
			 const char *note, uint64_t bytes, bool first)
{
	char a[32], b[32], c[32];
	struct mb_field f[] = { MB_FIELD_T(head, what),
				note ? MB_FIELD_T(note_head, note) : MB_FIELD_NONE(note_head),
				MB_FIELD_TR("bytes", mb_fmt_grouped(a, sizeof(a), bytes)),
				MB_FIELD_TR("", mb_fmt_bytes(b, sizeof(b), bytes)),
				MB_FIELD_TR("", mb_fmt_gib(c, sizeof(c), bytes)) };

	MD->record(f, 5, first);
}

static void md_model(const struct mb_model *m, const struct mb_plan *p)
{
	char name[MB_MD_LEN(sizeof(m->name))], source[MB_MD_LEN(sizeof(m->source))];

	printf("# Plan: %s, ZeRO stage %u, rank %u of %u\n\n", mb_md(name, sizeof(name), m->name),
	       p->set.stage, p->set.rank, p->set.world_size);
	printf("Model from %s: %u decoder layer%s, %zu tensor%s.\n\n",
	       mb_md(source, sizeof(source), m->source), m->layers, m->layers == 1 ? "" : "s",
	       m->nparams, m->nparams == 1 ? "" : "s");
	md_count_row("total", (long)m->nparams, m->numel_total, true);
	md_count_row("Muon (2-D, not embed or lm_head)", (long)m->nparams_muon, m->numel_muon,
		     false);
	md_count_row("AdamW (the rest)", (long)(m->nparams - m->nparams_muon), m->numel_adamw,
		     false);
	if (p->set.world_size > 1) {
		md_count_row("this rank's share", -1, p->local_numel, false);
		md_count_row("this rank's Muon share", -1, p->local_muon, false);
	}
}

/*
 * "pin, both, pipeline": the variants (mb_variant's table) that pin the
 * momentum (PINS) or not, where ALIVE is 0; else those with ALIVE batches
 * alive at once.
 */
static const char *variants(char *buf, size_t size, bool pins, unsigned alive)
{
	size_t n = 0;
	unsigned v;

	buf[0] = '\0';
	for (v = 0; v < MB_NVARIANTS && n < size; v++)
		if (alive ? mb_variant_alive((enum mb_variant)v) == alive
			  : mb_variant_pins((enum mb_variant)v) == pins)
			n += (size_t)snprintf(buf + n, size - n, "%s%s", n ? ", " : "",
					      mb_variant_name((enum mb_variant)v));
	return buf;
}

static const char *pinning(char *buf, size_t size, bool pins)
{
	return variants(buf, size, pins, 0);
}

/* "pinned in all (pin, both, pipeline)" */
static const char *pinned_row(char *buf, size_t size, bool pins)
{
	char which[64];

	snprintf(buf, size, "pinned in all (%s)", pinning(which, sizeof(which), pins));
	return buf;
}

#define BUFFER "buffer"
#define PINNED "pinned (pin_memory on)"

static void md_host(const struct mb_plan *p, bool device_copy)
{
	char pinned[96], limit[32], row[96], which[64];
	int b;

	printf("\n## Host buffers of this rank\n\n");
	printf("Pinned buffers are cut into chunks of at most %s (--pin-chunk, and at most the "
	       "device's largest allocation), between parameters.\n\n",
	       p->set.pin_chunk_bytes
		       ? mb_fmt_bytes_iec(limit, sizeof(limit), p->set.pin_chunk_bytes)
		       : "any size");
	for (b = 0; b < MB_HOST_NBUFFERS; b++) {
		if (b == MB_HOST_GRADS_BF16 && !p->host_bytes[b])
			continue; /* ZeRO-3's only */
		if (!mb_host_buffer_on_bus(b))
			snprintf(pinned, sizeof(pinned), "no");
		else if (b == MB_HOST_STAGING && p->set.params_back == MB_BACK_PAGEABLE)
			snprintf(pinned, sizeof(pinned), "no (--params-back pageable)");
		else
			snprintf(pinned, sizeof(pinned), "%s, %zu chunk%s",
				 b == MB_HOST_MOMENTUM ? pinning(which, sizeof(which), true)
						       : "yes",
				 p->host_chunks[b], p->host_chunks[b] == 1 ? "" : "s");
		if (b == MB_HOST_MOMENTUM) {
			char name[64];

			snprintf(name, sizeof(name), "%s (%s)", mb_host_buffer_names[b],
				 mb_momentum_dtype_names[p->set.momentum_dtype]);
			md_bytes_row(BUFFER, name, PINNED, pinned, p->host_bytes[b], !b);
			continue;
		}
		md_bytes_row(BUFFER, mb_host_buffer_names[b], PINNED, pinned, p->host_bytes[b], !b);
	}
	md_bytes_row(BUFFER, pinned_row(row, sizeof(row), false), PINNED, NULL,
		     mb_plan_pinned_bytes(p, false), false);
	md_bytes_row(BUFFER, pinned_row(row, sizeof(row), true), PINNED, NULL,
		     mb_plan_pinned_bytes(p, true), false);
	if (device_copy)
		printf("\nWith --pinned-device-copy yes the device also holds a copy of the pinned "
		       "memory, beside its peak: %s (%s), %s (%s). NVIDIA's OpenCL keeps one of "
		       "every mapped CL_MEM_ALLOC_HOST_PTR buffer; --pinned-alloc nv pins without "
		       "it.\n",
		       mb_fmt_bytes_iec(limit, sizeof(limit), mb_plan_pinned_bytes(p, false)),
		       pinning(which, sizeof(which), false),
		       mb_fmt_bytes_iec(row, sizeof(row), mb_plan_pinned_bytes(p, true)),
		       pinning(pinned, sizeof(pinned), true));
}

/* The first group's matrices, so that the apply order can be seen. */
static void md_first_group(const struct mb_model *m, const struct mb_plan *p)
{
	const struct mb_plan_group *g = p->ngroups ? &p->groups[0] : NULL;
	const size_t most = 8;
	size_t k;

	if (!g)
		return;
	printf("\nParameter order: %s (--param-order). The first %s:\n\n",
	       p->set.order == MB_ORDER_SHAPE ? "by shape, largest first, as DeepSpeed's Muon"
					      : "the model's",
	       mb_plan_batched(&p->set) ? "batch" : "sub-group");
	for (k = g->first; k < g->end && k < g->first + most; k++) {
		const struct mb_param *q = &m->params[p->order[k]];

		printf("- `");
		mb_print_md_text(q->name);
		printf("` (%llux%llu)\n", (unsigned long long)q->rows, (unsigned long long)q->cols);
	}
	if (g->end - g->first > most)
		printf("- and %zu more\n", g->end - g->first - most);
}

/* The most ranks whose plans plan sums for the node's host memory. */
#define NODE_RANKS_MAX 64

/*
 * The whole node's host memory, where --world-size puts W ranks on one host:
 * each buffer summed over every rank's plan, beside this rank's. What run's
 * fit check holds against the host (each rank's share times the ranks on it).
 */
static int md_node(const struct mb_model *m, const struct mb_plan *p)
{
	uint64_t node[MB_HOST_NBUFFERS] = { 0 }, mine = 0, all = 0;
	struct mb_plan_settings set = p->set;
	struct mb_plan other;
	char a[32], b[32], c[32];
	bool first = true;
	int bf, err;

	if (p->set.world_size <= 1)
		return 0;
	printf("\n## Host memory of the node: %u ranks on one host\n\n", p->set.world_size);
	if (p->set.world_size > NODE_RANKS_MAX) {
		printf("Not summed past %d ranks on one host.\n", NODE_RANKS_MAX);
		return 0;
	}
	for (set.rank = 0; set.rank < p->set.world_size; set.rank++) {
		if ((err = mb_plan_build(&other, m, &set)))
			return err;
		for (bf = 0; bf < MB_HOST_NBUFFERS; bf++)
			node[bf] += other.host_bytes[bf];
		mb_plan_release(&other);
	}
	printf("Every rank's host buffers at once (a CPU device's memory, which is the host's, "
	       "aside): what run's fit check holds against the host, each rank's share times "
	       "the ranks on it.\n\n");
	for (bf = 0; bf <= MB_HOST_NBUFFERS; bf++) {
		bool total = bf == MB_HOST_NBUFFERS;
		uint64_t own = total ? mine : p->host_bytes[bf], sum = total ? all : node[bf];

		if (!total && !node[bf])
			continue;
		mine += total ? 0 : own;
		all += total ? 0 : sum;
		struct mb_field f[] = { MB_FIELD_T("buffer",
						   total ? "all" : mb_host_buffer_names[bf]),
					MB_FIELD_TR("this rank", mb_fmt_bytes(a, sizeof(a), own)),
					MB_FIELD_TR("the node", mb_fmt_bytes(b, sizeof(b), sum)),
					MB_FIELD_TR("", mb_fmt_gib(c, sizeof(c), sum)) };

		MD->record(f, 4, first);
		first = false;
	}
	return 0;
}

static void md_apply(const struct mb_model *m, const struct mb_plan *p)
{
	const struct mb_plan_group *big = p->ngroups ? &p->groups[p->largest_group] : NULL;
	char a[32], b[32], c[32];

	if (p->set.stage == 3 && !mb_plan_batched(&p->set)) {
		printf("\n## Muon apply: %zu matrices in %zu sub-groups of %s elements\n\n",
		       p->matrices, p->ngroups, mb_fmt_count(a, sizeof(a), p->set.sub_group_size));
		printf("Each sub-group's Muon grads and momentum go to the device at once, and a "
		       "bf16 copy of its grads is made there, as DeepSpeed's; each matrix's update "
		       "gets a buffer of its own (--zero3-apply subgroup).\n\n");
	} else if (p->set.stage == 3) {
		size_t subgroups = p->ngroups ? p->groups[p->ngroups - 1].subgroup + 1 : 0;

		printf("\n## Muon apply: %zu matrices in %zu batches under a %s gather budget, "
		       "within %zu sub-group%s of %s elements\n\n",
		       p->matrices, p->ngroups,
		       mb_fmt_bytes_iec(a, sizeof(a), p->set.gather_budget_bytes), subgroups,
		       subgroups == 1 ? "" : "s",
		       mb_fmt_count(b, sizeof(b), p->set.sub_group_size));
		printf("Batched as ZeRO-1/2's apply, a batch never crossing a sub-group's end "
		       "(--zero3-apply batched; DeepSpeed gathers whole sub-groups): each batch's "
		       "grads, momentum and bf16 grad copy stay within the budget.\n\n");
	} else {
		printf("\n## Muon apply: %zu matrices in %zu batches under a %s gather "
		       "budget\n\n",
		       p->matrices, p->ngroups,
		       mb_fmt_bytes_iec(a, sizeof(a), p->set.gather_budget_bytes));
	}
	if (big)
		printf("Largest %s: %zu matrices, %s elements, %s of grads + momentum "
		       "gathered.\n",
		       mb_plan_batched(&p->set) ? "batch" : "sub-group", big->matrices,
		       mb_fmt_count(b, sizeof(b), big->gathered_numel),
		       mb_fmt_bytes(c, sizeof(c), mb_plan_gathered_bytes(p, big->gathered_numel)));
	md_first_group(m, p);
}

static void md_step(const struct mb_plan *p, const char *precision)
{
	char a[32], b[32];

	printf("\n## Per step\n\n");
#define ROW(what, dir, bytes, first) md_bytes_row("transfer", what, "direction", dir, bytes, first)
	ROW(p->bwd_h2d_bytes ? "backward: grads to the host (bf16 out, then fp32)"
			     : "backward: grads to the host",
	    "D2H", p->bwd_d2h_bytes, true);
	if (p->bwd_h2d_bytes)
		ROW("backward: bf16 grads back to the device", "H2D", p->bwd_h2d_bytes, false);
	ROW("Muon apply: grads + momentum", "H2D", p->apply_h2d_bytes, false);
	ROW("Muon apply: update + momentum", "D2H", p->apply_d2h_bytes, false);
	ROW("params back (bf16)", "H2D", p->params_h2d_bytes, false);
	ROW("all", "H2D", p->bwd_h2d_bytes + p->apply_h2d_bytes + p->params_h2d_bytes, false);
	ROW("all", "D2H", p->bwd_d2h_bytes + p->apply_d2h_bytes, false);
#undef ROW
	if (p->set.stage == 3)
		printf("\nThe first step copies no momentum to the device: DeepSpeed's "
		       "_apply_muon_updates_cpu_offload creates it there as zeros.\n");
	printf("\nNewton-Schulz per step (%s, --ns-method): %s FLOP (%s) over %zu matrices, "
	       "counted as %s for an m x n matrix with m <= n.\n",
	       mb_ns_method_names[p->set.ns_method], mb_fmt_count(a, sizeof(a), p->ns_flops),
	       mb_fmt_grouped(b, sizeof(b), p->ns_flops), p->matrices,
	       p->set.ns_method == MB_NS_GRAM ? "8m²n + 28m³ (30m³, the standard's, when square)"
					      : "5 (4m²n + 2m³)");
	printf("Its GEMMs in %s (--ns-precision): the same FLOPs at every precision; the "
	       "workspace's matrices in %s.\n",
	       strcmp(precision, "auto")
		       ? precision
		       : "auto: DeepSpeed's where the device has the tensor-core path "
			 "(gram fp16, standard bf16), else fp32",
	       p->set.ns_precision == MB_PREC_FP32
		       ? "fp32"
		       : "16 bits, half fp32's bytes, as a framework keeps them");
}

/* The peak table's headings: the variants with 1, 2, 3 batches alive. */
struct peak_head {
	char alive[3][96];
};

static void peak_head(struct peak_head *h)
{
	char names[64];
	unsigned k;

	for (k = 0; k < 3; k++)
		snprintf(h->alive[k], sizeof(h->alive[k]), "%s (bytes)",
			 variants(names, sizeof(names), false, k + 1));
}

/* A row of the peak table: one figure (the same for all) or one per batches alive (1, 2, 3). */
static void md_peak_row3(const struct peak_head *h, const char *what, uint64_t sync,
			 uint64_t overlap, uint64_t pipeline, bool first)
{
	uint64_t v[3] = { sync, overlap, pipeline };
	char a[3][32], b[3][32];
	struct mb_field f[7] = { MB_FIELD_T("part", what) };
	int i;

	for (i = 0; i < 3; i++) {
		f[1 + 2 * i] = MB_FIELD_TR(h->alive[i], mb_fmt_grouped(a[i], sizeof(a[i]), v[i]));
		f[2 + 2 * i] = MB_FIELD_TR("", mb_fmt_gib(b[i], sizeof(b[i]), v[i]));
	}
	MD->record(f, 7, first);
}

static void md_peak_row(const struct peak_head *h, const char *what, uint64_t all)
{
	md_peak_row3(h, what, all, all, all, false);
}

/* A row of the forward and backward's peak table. */
static void md_phase_row(const char *phase, uint64_t bytes, bool first)
{
	char a[32], b[32];
	struct mb_field f[] = { MB_FIELD_T("phase", phase),
				MB_FIELD_TR("bytes", mb_fmt_grouped(a, sizeof(a), bytes)),
				MB_FIELD_TR("", mb_fmt_gib(b, sizeof(b), bytes)) };

	MD->record(f, 3, first);
}

static void md_peak(const struct mb_plan *p)
{
	char a[32], b[32];
	struct peak_head h;

	peak_head(&h);
	printf("\n## Predicted peak device memory, step phase\n\n");
	md_peak_row3(&h,
		     p->set.stage == 3 ? "resident bf16 params (this rank's share)"
				       : "resident bf16 params (whole model)",
		     p->resident_bytes, p->resident_bytes, p->resident_bytes, true);
	if (p->ds_buffer_bytes)
		md_peak_row(
			&h,
			p->set.stage == 3
				? "DeepSpeed's reduce bucket (bf16, --reduce-bucket-size)"
				: "temp_grad_buffer_for_gpu_offload (bf16, the largest parameter)",
			p->ds_buffer_bytes);
	md_peak_row3(&h,
		     !mb_plan_batched(&p->set)
			     ? "Muon apply: sub-group + update buffers (nothing prefetched)"
			     : "Muon apply: batch (+ the one in flight, + the next arriving)",
		     p->apply_bytes_sync, p->apply_bytes_overlap, p->apply_bytes_pipeline, false);
	md_peak_row(&h, "Newton-Schulz workspace", p->ns_workspace_bytes);
	md_peak_row3(&h, "**step peak**", p->peak_step_bytes_sync, p->peak_step_bytes_overlap,
		     p->peak_step_bytes_pipeline, false);
	printf("\nCLBlast's temporary buffers come on top; their size depends on the "
	       "device.\n");
	printf("\n## Predicted peak device memory, forward and backward\n\n");
	printf("The same resident buffers and workspace, with the synthetic "
	       "forward/backward's fp32 activations and weights (%s; --seq x --micro-batch). "
	       "In the backward the gradients are made in %s (--reduce-bucket-size elements, "
	       "at most the model) and reduced a parameter at a time, as DeepSpeed does: its "
	       "grads in fp32%s. ",
	       p->set.tokens ? "on" : "off: --fwd-bwd off",
	       p->set.stage == 3 ? "DeepSpeed's resident bf16 reduce bucket"
				 : "a bf16 reduce bucket allocated in the backward",
	       p->set.stage == 3 ? ", with their bf16 copy back from the host" : "");
	if (p->piece_during_elems)
		printf("The buckets made before the backward's last GEMMs are reduced during "
		       "them (overlap_comm), their largest parameter's buffers, %s, alive with the "
		       "GEMMs' buffers; ",
		       mb_fmt_bytes_iec(a, sizeof(a),
					mb_plan_piece_bytes(p, p->piece_during_elems)));
	printf("%s after the GEMMs: %s for the largest parameter.\n\n",
	       p->piece_during_elems ? "the rest" : "all of them",
	       mb_fmt_bytes_iec(b, sizeof(b), mb_plan_piece_bytes(p, p->piece_after_elems)));
	if (p->set.tokens)
		md_phase_row("forward", p->peak_forward_bytes, true);
	md_phase_row("backward", p->peak_backward_bytes, !p->set.tokens);
}

/*
 * A sweep of --gather-budget and --sub-group-size: each point's plan, as one
 * Markdown table (batches or sub-groups, the largest, the step peak by
 * batches alive), or a CSV row or JSON object each with every field.
 */
static int plan_sweep(const struct mb_args *args, const struct mb_model *m,
		      const struct mb_grid *grid, enum mb_precision precision)
{
	enum mb_format fmt = args->format;
	struct field fields[NFIELDS_MAX];
	struct mb_step_settings s;
	const struct mb_plan_settings *set = &s.plan;
	char a[64], b[32], c[32], d[32], e[32], f[32], head[3][96];
	struct mb_plan plan;
	size_t i, n, k;
	int err;

	if (fmt == MB_FORMAT_MD) {
		char name[MB_MD_LEN(sizeof(m->name))];

		printf("# Plan sweep: %s, ZeRO-%u\n\n", mb_md(name, sizeof(name), m->name),
		       grid->cells[0].stage);
		for (k = 0; k < 3; k++)
			snprintf(head[k], sizeof(head[k]), "step peak, %zu alive (%s)", k + 1,
				 variants(a, sizeof(a), false, (unsigned)k + 1));
	} else if (fmt == MB_FORMAT_JSON)
		printf("[");
	for (i = 0; i < grid->ncells; i++) {
		mb_setup_step_settings(args, &grid->cells[i], precision, &s);
		if ((err = mb_plan_build(&plan, m, set)))
			return err;
		n = plan_fields(m, &plan, fields);
		if (fmt == MB_FORMAT_CSV) {
			print_csv(m, &plan, fields, n, !i);
		} else if (fmt == MB_FORMAT_JSON) {
			printf("%s", i ? "," : "");
			print_json(m, &plan, fields, n);
		} else {
			struct mb_field r[] = {
				MB_FIELD_T("--gather-budget",
					   mb_fmt_bytes_iec(a, sizeof(a),
							    set->gather_budget_bytes)),
				MB_FIELD_T("--sub-group-size (elements)",
					   mb_fmt_grouped(b, sizeof(b), set->sub_group_size)),
				MB_FIELD_NR("groups", plan.ngroups),
				MB_FIELD_TR("largest gathered",
					    mb_fmt_bytes_iec(c, sizeof(c),
							     mb_plan_batch_bytes(
								     &plan,
								     plan.groups[plan.largest_group]
									     .gathered_numel))),
				MB_FIELD_TR(head[0],
					    mb_fmt_gib(d, sizeof(d), plan.peak_step_bytes_sync)),
				MB_FIELD_TR(head[1],
					    mb_fmt_gib(e, sizeof(e), plan.peak_step_bytes_overlap)),
				MB_FIELD_TR(head[2], mb_fmt_gib(f, sizeof(f),
								plan.peak_step_bytes_pipeline)),
			};

			MD->record(r, 7, !i);
		}
		mb_plan_release(&plan);
	}
	if (fmt == MB_FORMAT_JSON)
		printf("]\n");
	return 0;
}

int mb_cmd_plan(const struct mb_args *args)
{
	struct field fields[NFIELDS_MAX];
	enum mb_precision precision;
	struct mb_step_settings set;
	struct mb_model model;
	struct mb_grid grid;
	struct mb_plan plan;
	unsigned stages[3];
	size_t n;
	int err;

	if ((err = mb_setup_stages(args, stages, &n)))
		return err;
	if (n != 1)
		return mb_bad_input("--stage: plan takes one stage, not '%s'", args->stages);
	/* checked as run checks it; with no device, the plan shows it as asked */
	if ((err = mb_setup_precision(args, NULL, mb_args_ns_method(args), &precision)))
		return err;
	if ((err = mb_setup_model(args, &model)))
		return err;
	if ((err = mb_setup_grid(args, false, &grid)))
		goto out_model;
	if (args->gather_budgets.n > 1 || args->sub_group_sizes.n > 1) {
		err = plan_sweep(args, &model, &grid, precision);
		goto out_grid;
	}
	mb_setup_step_settings(args, &grid.cells[0], precision, &set);
	if ((err = mb_plan_build(&plan, &model, &set.plan)))
		goto out_grid;
	n = plan_fields(&model, &plan, fields);
	if (args->format == MB_FORMAT_CSV) {
		print_csv(&model, &plan, fields, n, true);
	} else if (args->format == MB_FORMAT_JSON) {
		print_json(&model, &plan, fields, n);
	} else {
		md_model(&model, &plan);
		md_host(&plan, !strcmp(args->pinned_device_copy, "yes"));
		if ((err = md_node(&model, &plan)))
			goto out_plan;
		md_apply(&model, &plan);
		md_step(&plan, args->ns_precisions);
		md_peak(&plan);
	}
out_plan:
	mb_plan_release(&plan);
out_grid:
	mb_grid_release(&grid);
out_model:
	mb_model_release(&model);
	return err;
}

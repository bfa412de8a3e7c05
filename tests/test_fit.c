/*
 * The fit check, with made-up host and device figures and no device: a cell
 * that fits; the host short (the figures, and the largest --layers that
 * fits, checked against the model cut as --layers cuts it); the device short
 * of memory or of one allocation; a pinned buffer larger than one allocation
 * (--pin-memory off); a CPU device, whose buffers are host memory; nothing
 * that fits at all; and the meminfo figures the host's side comes from.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "mb_config.h"
#include "mb_err.h"
#include "mb_fit.h"
#include "mb_host.h"
#include "mb_num.h"
#include "mb_shard.h"

#define GIB (1ull << 30)
#define MIB (1ull << 20)

static char reason[1024];

static struct mb_fit_cell cell(unsigned stage)
{
	struct mb_fit_cell c = {
		.plan = { .stage = stage,
			  .gather_budget_bytes = 512 * MIB,
			  .sub_group_size = 1000000000,
			  .world_size = 1,
			  /* the figures below were worked for fp32 momentum and the
			   * standard Newton-Schulz's workspace */
			  .ns_method = MB_NS_STANDARD },
		.pin_memory = true,
	};
	return c;
}

static struct mb_fit_host roomy_host(void)
{
	struct mb_fit_host h = { .available_bytes = 1ull << 50, .where = "MemAvailable" };
	return h;
}

static struct mb_fit_device roomy_device(void)
{
	struct mb_fit_device d = { .name = "dev",
				   .global_mem_bytes = 1ull << 50,
				   .max_alloc_bytes = 1ull << 50,
				   .device_alloc_limit = 1ull << 50 };
	return d;
}

static void load(struct mb_model *m, const char *name, unsigned layers)
{
	assert_int_equal(mb_config_load_builtin(m, name, layers), 0);
}

/* Whether REASON holds TEXT; the reason is printed when it does not. */
static void assert_says(const char *text)
{
	if (!strstr(reason, text))
		fail_msg("no '%s' in '%s'", text, reason);
}

/* The number after PREFIX in REASON. */
static unsigned long long after(const char *prefix)
{
	const char *p = strstr(reason, prefix);

	if (!p)
		fail_msg("no '%s' in '%s'", prefix, reason);
	return strtoull(p + strlen(prefix), NULL, 10);
}

static void tiny_fits(void **state)
{
	struct mb_fit_host h = roomy_host();
	struct mb_fit_device d = roomy_device();
	struct mb_fit_cell c = cell(2);
	struct mb_model m;
	unsigned stage;

	(void)state;
	load(&m, "tiny", 0);
	for (stage = 1; stage <= 3; stage++) {
		c.plan.stage = stage;
		assert_int_equal(mb_fit_check(&m, &c, &h, &d, reason, sizeof(reason)), 1);
		assert_string_equal(reason, "");
	}
	mb_model_release(&m);
}

/*
 * Qwen3-4B's host buffers (57.9 GB: fp32 master, grads, momentum, AdamW
 * moments and bf16 staging, as muonbench plan lists them) on a 30 GB host.
 */
static void host_short(void **state)
{
	struct mb_fit_host h = { .available_bytes = 30000000000ull, .where = "MemAvailable" };
	struct mb_fit_device d = roomy_device();
	struct mb_fit_cell c = cell(2);
	struct mb_model m, cut;
	unsigned layers;

	(void)state;
	load(&m, "qwen3-4b", 0);
	assert_int_equal(mb_fit_check(&m, &c, &h, &d, reason, sizeof(reason)), 0);
	assert_says("does not fit: the host buffers need 53.9 GiB and the host has 27.9 GiB "
		    "(MemAvailable)");
	assert_null(strstr(reason, "device")); /* the device is not short */
	layers = (unsigned)after("would fit: --layers ");
	assert_true(layers > 0 && layers < 36);
	/* the largest that fits, as --layers cuts the model */
	load(&cut, "qwen3-4b", layers);
	assert_int_equal(mb_fit_check(&cut, &c, &h, &d, reason, sizeof(reason)), 1);
	mb_model_release(&cut);
	load(&cut, "qwen3-4b", layers + 1);
	assert_int_equal(mb_fit_check(&cut, &c, &h, &d, reason, sizeof(reason)), 0);
	mb_model_release(&cut);
	mb_model_release(&m);
}

/*
 * Eight ranks on one host (run under MPI): each rank's ZeRO-2 share of
 * Qwen3-4B's host buffers fits a 30 GB host alone, but not eight of them;
 * the reason gives the node's sum and a rank's.
 */
static void ranks_share_the_host(void **state)
{
	struct mb_fit_host h = { .available_bytes = 30000000000ull, .where = "MemAvailable" };
	struct mb_fit_device d = roomy_device();
	struct mb_fit_cell c = cell(2);
	struct mb_plan_settings share = c.plan;
	struct mb_model m, rank0;

	(void)state;
	load(&m, "qwen3-4b", 0);
	share.world_size = 8; /* rank 0's share, as run cuts it (a world of one after) */
	assert_int_equal(mb_shard_model(&rank0, &m, &share), 0);
	h.ranks = 1;
	if (mb_fit_check(&rank0, &c, &h, &d, reason, sizeof(reason)) != 1)
		fail_msg("one rank: %s", reason);
	h.ranks = 8;
	assert_int_equal(mb_fit_check(&rank0, &c, &h, &d, reason, sizeof(reason)), 0);
	assert_says("the host buffers of the 8 ranks on this host need ");
	assert_says(" each) and the host has 27.9 GiB (MemAvailable)");
	mb_model_release(&rank0);
	mb_model_release(&m);
}

/* Tiny's step peak against a device of 16 MiB, and against a limit of 16 MiB. */
static void device_short(void **state)
{
	struct mb_fit_host h = roomy_host();
	struct mb_fit_device d = roomy_device();
	struct mb_fit_cell c = cell(2), smaller;
	struct mb_fit_need need;
	struct mb_model m;
	unsigned long long budget;

	(void)state;
	load(&m, "tiny", 0);
	c.plan.reduce_bucket_elems = 1 << 18; /* a backward well below the step */
	d.global_mem_bytes = 16 * MIB;
	assert_int_equal(mb_fit_need(&m, &c, false, &need), 0);
	assert_true(need.device_peak_bytes > 16 * MIB);
	assert_int_equal(mb_fit_check(&m, &c, &h, &d, reason, sizeof(reason)), 0);
	assert_says("does not fit: the device peak (step phase, CLBlast's temporaries aside) is "
		    "18.5 MiB and 'dev' has 16.0 MiB of global memory; would fit: --layers 1");
	/* the largest halving of the gather budget that fits */
	budget = after("--gather-budget ");
	assert_says("Mi");
	smaller = c;
	smaller.plan.gather_budget_bytes = budget * MIB;
	assert_int_equal(mb_fit_check(&m, &smaller, &h, &d, reason, sizeof(reason)), 1);
	smaller.plan.gather_budget_bytes = 2 * budget * MIB;
	assert_int_equal(mb_fit_check(&m, &smaller, &h, &d, reason, sizeof(reason)), 0);

	/* --device-mem-limit, where it is less than the device's memory, is the device's */
	d.global_mem_bytes = GIB;
	d.limit_bytes = 16 * MIB;
	assert_int_equal(mb_fit_check(&m, &c, &h, &d, reason, sizeof(reason)), 0);
	assert_says("is 18.5 MiB and the --device-mem-limit is 16.0 MiB");
	d.limit_bytes = 2 * GIB;
	assert_int_equal(mb_fit_check(&m, &c, &h, &d, reason, sizeof(reason)), 1);

	/* stage 3's sub-group is one buffer: a smaller --sub-group-size */
	c.plan.stage = 3;
	d.limit_bytes = 22 * MIB;
	assert_int_equal(mb_fit_check(&m, &c, &h, &d, reason, sizeof(reason)), 0);
	assert_says("the device peak (step phase");
	assert_says("--sub-group-size ");
	mb_model_release(&m);
}

/*
 * A need that equals what there is fits, one byte more does not: the device
 * peak against the device's memory and against --device-mem-limit, the
 * host's, the largest pinned buffer and the largest device buffer.
 */
static void exact_fit(void **state)
{
	struct mb_fit_host h = roomy_host();
	struct mb_fit_device d = roomy_device();
	struct mb_fit_cell c = cell(2);
	struct mb_fit_need need;
	struct mb_model m;

	(void)state;
	load(&m, "tiny", 0);
	assert_int_equal(mb_fit_need(&m, &c, false, &need), 0);
	d.global_mem_bytes = need.device_peak_bytes;
	assert_int_equal(mb_fit_check(&m, &c, &h, &d, reason, sizeof(reason)), 1);
	d.global_mem_bytes--;
	assert_int_equal(mb_fit_check(&m, &c, &h, &d, reason, sizeof(reason)), 0);
	assert_says("the device peak (step phase");

	d = roomy_device();
	d.limit_bytes = need.device_peak_bytes;
	assert_int_equal(mb_fit_check(&m, &c, &h, &d, reason, sizeof(reason)), 1);
	d.limit_bytes--;
	assert_int_equal(mb_fit_check(&m, &c, &h, &d, reason, sizeof(reason)), 0);
	assert_says("--device-mem-limit");

	d = roomy_device();
	h.available_bytes = need.host_bytes;
	assert_int_equal(mb_fit_check(&m, &c, &h, &d, reason, sizeof(reason)), 1);
	h.available_bytes--;
	assert_int_equal(mb_fit_check(&m, &c, &h, &d, reason, sizeof(reason)), 0);

	h = roomy_host();
	d.max_alloc_bytes = need.pinned_largest_bytes;
	assert_int_equal(mb_fit_check(&m, &c, &h, &d, reason, sizeof(reason)), 1);
	d.max_alloc_bytes--;
	assert_int_equal(mb_fit_check(&m, &c, &h, &d, reason, sizeof(reason)), 0);

	d = roomy_device();
	d.device_alloc_limit = need.device_largest_bytes;
	assert_int_equal(mb_fit_check(&m, &c, &h, &d, reason, sizeof(reason)), 1);
	d.device_alloc_limit--;
	assert_int_equal(mb_fit_check(&m, &c, &h, &d, reason, sizeof(reason)), 0);
	mb_model_release(&m);
}

/*
 * CLBlast's temporaries, where the caller gives them, are in every phase's
 * peak and in the suggestions: a stage 3 cell that fits a limit without them
 * does not with them, and the sub-group size suggested fits with them.
 */
static void clblast_temporaries(void **state)
{
	struct mb_fit_host h = roomy_host();
	struct mb_fit_device d = roomy_device();
	struct mb_fit_cell c = cell(3), with, smaller;
	struct mb_fit_need plain, need, more;
	struct mb_model m;

	(void)state;
	load(&m, "tiny", 0);
	c.plan.reduce_bucket_elems = 1 << 18;
	c.tokens = 128;
	assert_int_equal(mb_fit_need(&m, &c, false, &plain), 0);
	with = c;
	with.clblast_bytes = 2 * MIB;
	with.clblast_fwd_bytes = 40 * MIB; /* more than any buffer of the pass */
	assert_int_equal(mb_fit_need(&m, &with, false, &need), 0);
	assert_string_equal(need.device_peak_phase, "forward/backward");
	assert_true(need.device_peak_bytes > plain.device_peak_bytes);
	assert_string_equal(need.device_largest, "clblast.fwd.temp");
	with.clblast_fwd_bytes = 80 * MIB; /* the pass's peak grows by as much */
	assert_int_equal(mb_fit_need(&m, &with, false, &more), 0);
	assert_true(more.device_peak_bytes == need.device_peak_bytes + 40 * MIB);
	with.tokens = c.tokens = 0;
	assert_int_equal(mb_fit_need(&m, &c, false, &plain), 0);
	assert_int_equal(mb_fit_need(&m, &with, false, &need), 0);
	assert_string_equal(plain.device_peak_phase, "step");
	assert_true(need.device_peak_bytes == plain.device_peak_bytes + 2 * MIB);

	d.limit_bytes = plain.device_peak_bytes + MIB;
	assert_int_equal(mb_fit_check(&m, &c, &h, &d, reason, sizeof(reason)), 1);
	assert_int_equal(mb_fit_check(&m, &with, &h, &d, reason, sizeof(reason)), 0);
	assert_says("the device peak (step phase, CLBlast's temporaries included) is ");
	smaller = with;
	smaller.plan.sub_group_size = after("--sub-group-size ");
	assert_true(smaller.plan.sub_group_size > 0);
	assert_int_equal(mb_fit_check(&m, &smaller, &h, &d, reason, sizeof(reason)), 1);
	mb_model_release(&m);
}

/* A device whose CLBlast wants a byte of temporary per parameter of the model. */
static int byte_per_param(const struct mb_model *m, struct mb_fit_cell *c, void *ctx)
{
	(*(unsigned *)ctx)++;
	c->clblast_bytes = m->numel_total;
	c->clblast_fwd_bytes = 0;
	return 0;
}

/*
 * The device's CLBlast is asked for each model a suggestion checks: a model
 * smaller than this one is held against its own temporaries, not this one's.
 */
static void clblast_per_model(void **state)
{
	struct mb_fit_host h = roomy_host();
	struct mb_fit_device d = roomy_device();
	struct mb_fit_cell c = cell(2), w;
	struct mb_fit_need tiny_need, need;
	struct mb_model m, tiny;
	unsigned asked = 0;

	(void)state;
	load(&m, "qwen3-0.6b", 0);
	load(&tiny, "tiny", 0);
	c.pin_memory = false;
	w = c;
	w.clblast_bytes = tiny.numel_total;
	assert_int_equal(mb_fit_need(&tiny, &w, false, &tiny_need), 0);
	w.clblast_bytes = m.numel_total;
	assert_int_equal(mb_fit_need(&m, &w, false, &need), 0);
	/* room for tiny with its own temporaries, not for tiny with qwen3-0.6b's */
	d.global_mem_bytes = tiny_need.device_peak_bytes + MIB;
	assert_true(tiny_need.device_peak_bytes - tiny.numel_total + m.numel_total >
		    d.global_mem_bytes);
	d.clblast = byte_per_param;
	d.clblast_ctx = &asked;
	assert_int_equal(mb_fit_check(&m, &c, &h, &d, reason, sizeof(reason)), 0);
	assert_says("CLBlast's temporaries included) is ");
	assert_says("would fit: --model tiny");
	assert_true(asked > 2);
	mb_model_release(&tiny);
	mb_model_release(&m);
}

/* Qwen3-4B's resident bf16 params (7.49 GiB) are one allocation of the device. */
static void device_allocation_short(void **state)
{
	struct mb_fit_host h = roomy_host();
	struct mb_fit_device d = roomy_device();
	struct mb_fit_cell c = cell(2);
	struct mb_model m;

	(void)state;
	load(&m, "qwen3-4b", 0);
	c.pin_memory = false;
	d.max_alloc_bytes = d.device_alloc_limit = 2 * GIB;
	assert_int_equal(mb_fit_check(&m, &c, &h, &d, reason, sizeof(reason)), 0);
	assert_says("does not fit: device buffer 'params.bf16' (7.49 GiB) is larger than 'dev' "
		    "allocates at once (2.00 GiB)");
	/* where the driver takes larger buffers with a flag (Intel's GPUs), they fit */
	d.device_alloc_limit = UINT64_MAX;
	assert_int_equal(mb_fit_check(&m, &c, &h, &d, reason, sizeof(reason)), 1);
	d.device_alloc_limit = 2 * GIB;
	assert_int_equal(mb_fit_check(&m, &c, &h, &d, reason, sizeof(reason)), 0);
	assert_says("would fit: --layers ");
	/* Qwen3-1.7B's bf16 params are 3.4 GB: too much too */
	assert_says(", or --model qwen3-0.6b");
	mb_model_release(&m);
}

/*
 * Pinned buffers are cut into chunks between parameters: Qwen3-0.6B's pinned
 * grads (2.4 GB) fit allocations of 2 GiB, but not of 512 MiB, where one
 * parameter, the embedding (151936 x 1024 fp32, 622 MB), is larger than one.
 */
static void pinned_short(void **state)
{
	struct mb_fit_host h = roomy_host();
	struct mb_fit_device d = roomy_device();
	struct mb_fit_cell c = cell(2);
	struct mb_fit_need need;
	struct mb_model m;
	char grads[32], want[256];

	(void)state;
	load(&m, "qwen3-0.6b", 0);
	c.plan.reduce_bucket_elems = 1u << 24; /* a 64 MiB bucket: not the culprit here */
	d.max_alloc_bytes = 2 * GIB;
	assert_int_equal(mb_fit_need(&m, &c, false, &need), 0);
	assert_string_equal(need.pinned_largest, "grads");
	assert_int_equal(need.pinned_largest_bytes, 4ull * 151936 * 1024);
	assert_true(4 * m.numel_total > 2 * GIB); /* the whole grads would not fit */
	assert_int_equal(mb_fit_check(&m, &c, &h, &d, reason, sizeof(reason)), 1);
	d.max_alloc_bytes = d.device_alloc_limit = 512ull << 20;
	assert_int_equal(mb_fit_check(&m, &c, &h, &d, reason, sizeof(reason)), 0);
	snprintf(want, sizeof(want),
		 "does not fit: pinned host buffer 'grads' has a parameter of %s, which is never "
		 "cut, and 'dev' allocates at most 512 MiB at once",
		 mb_fmt_bytes_iec(grads, sizeof(grads), 4ull * 151936 * 1024));
	assert_says(want);
	assert_says("--pin-memory off");
	/* unpinned, the bf16 params (1.2 GB, one device buffer) are what is left too large */
	c.pin_memory = false;
	assert_int_equal(mb_fit_check(&m, &c, &h, &d, reason, sizeof(reason)), 0);
	assert_null(strstr(reason, "pinned host buffer"));
	assert_says("device buffer 'params.bf16'");
	/* the pin variants pin the momentum too: it is smaller than the grads */
	c.pin_memory = c.pins_momentum = true;
	assert_int_equal(mb_fit_need(&m, &c, false, &need), 0);
	assert_string_equal(need.pinned_largest, "grads");
	mb_model_release(&m);
}

/* On a CPU device the device's buffers are host memory as well. */
static void cpu_device(void **state)
{
	struct mb_fit_host h = roomy_host();
	struct mb_fit_device d = roomy_device();
	struct mb_fit_cell c = cell(3);
	struct mb_fit_need apart, shared;
	struct mb_model m;

	(void)state;
	load(&m, "tiny", 0);
	assert_int_equal(mb_fit_need(&m, &c, false, &apart), 0);
	assert_int_equal(mb_fit_need(&m, &c, true, &shared), 0);
	assert_int_equal(apart.device_in_host_bytes, 0);
	assert_int_equal(shared.device_in_host_bytes, shared.device_peak_bytes);
	assert_int_equal(shared.host_bytes, apart.host_bytes + apart.device_peak_bytes);
	d.host_memory = true;
	h.available_bytes = apart.host_bytes + 1;
	assert_int_equal(mb_fit_check(&m, &c, &h, &d, reason, sizeof(reason)), 0);
	assert_says("(the device's 25.8 MiB included: a CPU device's memory is the host's)");
	d.host_memory = false;
	assert_int_equal(mb_fit_check(&m, &c, &h, &d, reason, sizeof(reason)), 1);
	mb_model_release(&m);
}

/*
 * The device's peak per phase, as the ledger measured it on PoCL without
 * CLBlast's temporaries (peak_device_own_bytes of run --config micro.json
 * --gather-budget 128Ki --momentum-dtype fp32 --ns-method standard): the
 * backward stand-in's buffers, stage 3's sub-group, and
 * with --seq 4096 the forward/backward's buffers.
 */
static void peaks_as_measured(void **state)
{
	struct mb_fit_cell c = cell(2);
	struct mb_fit_need n;
	struct mb_model m;

	(void)state;
	assert_int_equal(mb_config_load_file(&m, "tests/data/good/micro.json", 0), 0);
	c.plan.gather_budget_bytes = 128 << 10;
	assert_int_equal(mb_fit_need(&m, &c, false, &n), 0);
	/* with the 32 KiB temp_grad_buffer, the bf16 reduce bucket (the model), the largest
	 * parameter's grads in fp32 (the embedding, 64 KiB) and the norm's 256 B of partial
	 * sums */
	assert_int_equal(n.device_peak_bytes, 755716);
	assert_string_equal(n.device_peak_phase, "backward");
	c.plan.stage = 3;
	assert_int_equal(mb_fit_need(&m, &c, false, &n), 0);
	/* the sub-group with its bf16 grad copy, and the bf16 reduce bucket (the model) */
	assert_int_equal(n.device_peak_bytes, 1689348);
	assert_string_equal(n.device_peak_phase, "step");
	c.alive = 2;
	assert_int_equal(mb_fit_need(&m, &c, false, &n), 0);
	assert_int_equal(n.device_peak_bytes, 1738500);
	c.tokens = 4096;
	assert_int_equal(mb_fit_need(&m, &c, false, &n), 0);
	assert_int_equal(n.device_peak_bytes, 17565444);
	assert_string_equal(n.device_peak_phase, "forward/backward");
	mb_model_release(&m);
}

/*
 * The forward/backward's peak past the device: the largest halving of --seq
 * that fits (and it does fit), and --fwd-bwd off where no --seq does (the
 * pass's CLBlast temporaries alone too large).
 */
static void pass_short(void **state)
{
	struct mb_fit_host h = roomy_host();
	struct mb_fit_device d = roomy_device();
	struct mb_fit_cell c = cell(3), shorter;
	struct mb_fit_need full, half, quarter, none;
	struct mb_model m;

	(void)state;
	load(&m, "tiny", 0);
	c.micro_batch = 2;
	c.tokens = 2 * 2048;
	shorter = c;
	assert_int_equal(mb_fit_need(&m, &c, false, &full), 0);
	shorter.tokens = 2 * 1024;
	assert_int_equal(mb_fit_need(&m, &shorter, false, &half), 0);
	shorter.tokens = 2 * 512;
	assert_int_equal(mb_fit_need(&m, &shorter, false, &quarter), 0);
	shorter.tokens = 0;
	assert_int_equal(mb_fit_need(&m, &shorter, false, &none), 0);
	assert_string_equal(full.device_peak_phase, "forward/backward");
	assert_true(full.device_peak_bytes > half.device_peak_bytes &&
		    half.device_peak_bytes > quarter.device_peak_bytes &&
		    quarter.device_peak_bytes > none.device_peak_bytes);

	/* room for a quarter of the sequence, not half */
	d.limit_bytes = (half.device_peak_bytes + quarter.device_peak_bytes) / 2;
	assert_int_equal(mb_fit_check(&m, &c, &h, &d, reason, sizeof(reason)), 0);
	assert_says("the device peak (forward/backward phase");
	assert_int_equal(after("--seq "), 512);
	shorter.tokens = c.micro_batch * after("--seq ");
	assert_int_equal(mb_fit_check(&m, &shorter, &h, &d, reason, sizeof(reason)), 1);

	/* CLBlast's temporaries of the pass more than the room left beside the step,
	 * however short the sequence: no --seq fits, no forward/backward does */
	c.clblast_fwd_bytes = 64 * MIB;
	d.limit_bytes = none.device_peak_bytes;
	assert_int_equal(mb_fit_check(&m, &c, &h, &d, reason, sizeof(reason)), 0);
	assert_says("--fwd-bwd off");
	assert_null(strstr(reason, "--seq "));
	mb_model_release(&m);
}

static void nothing_fits(void **state)
{
	struct mb_fit_host h = roomy_host();
	struct mb_fit_device d = roomy_device();
	struct mb_fit_cell c = cell(2);
	struct mb_model m;

	(void)state;
	load(&m, "tiny", 0);
	d.global_mem_bytes = MIB;
	assert_int_equal(mb_fit_check(&m, &c, &h, &d, reason, sizeof(reason)), 0);
	assert_says("; no fewer --layers, --gather-budget or --sub-group-size, nor a smaller "
		    "built-in --model fits either");
	mb_model_release(&m);
}

static void bad_plan(void **state)
{
	struct mb_fit_host h = roomy_host();
	struct mb_fit_device d = roomy_device();
	struct mb_fit_cell c = cell(2);
	struct mb_model m;

	(void)state;
	load(&m, "tiny", 0);
	c.plan.gather_budget_bytes = 1024;
	assert_int_equal(mb_fit_check(&m, &c, &h, &d, reason, sizeof(reason)), -MB_EINPUT);
	assert_non_null(strstr(mb_errmsg(), "raise --gather-budget"));
	mb_model_release(&m);
}

static void meminfo(void **state)
{
	const char *proc = "MemTotal:       24683652 kB\nMemFree:        23737700 kB\n"
			   "MemAvailable:   24018612 kB\nBuffers:            3292 kB\n";
	const char *node = "Node 1 MemTotal:       20014876 kB\n"
			   "Node 1 MemFree:        19072628 kB\n";
	char where[128];
	uint64_t v;

	(void)state;
	assert_int_equal(mb_host_meminfo_value(proc, "MemAvailable", &v), 0);
	assert_int_equal(v, 24018612ull * 1024);
	assert_int_equal(mb_host_meminfo_value(proc, "MemFree", &v), 0);
	assert_int_equal(v, 23737700ull * 1024);
	assert_int_equal(mb_host_meminfo_value(node, "Node 1 MemFree", &v), 0);
	assert_int_equal(v, 19072628ull * 1024);
	assert_int_equal(mb_host_meminfo_value(proc, "Mem", &v), -MB_EINPUT);
	assert_int_equal(mb_host_meminfo_value(node, "MemFree", &v), -MB_EINPUT);
	/* this host's own figure */
	assert_int_equal(mb_host_mem_available(&v, where, sizeof(where)), 0);
	assert_true(v > 0);
	assert_true(!strcmp(where, "MemAvailable") || strstr(where, "NUMA node"));
}

/*
 * The shortfalls alone, as advise holds its points: fit's reason without its
 * "does not fit: " and what would fit; a NULL host or device is not checked,
 * and the --device-mem-limit is named where it is the device's memory, equal
 * to the global memory too (advise's device for a profile of another machine).
 */
static void shortfalls_alone(void **state)
{
	struct mb_fit_host h = { .available_bytes = 30000000000ull, .where = "MemAvailable" };
	struct mb_fit_device d = roomy_device();
	struct mb_fit_cell c = cell(2);
	struct mb_model m;
	char alone[sizeof(reason)], *would;

	(void)state;
	load(&m, "qwen3-4b", 0);
	d.global_mem_bytes = d.limit_bytes = 4 * GIB;
	assert_int_equal(mb_fit_check(&m, &c, &h, &d, reason, sizeof(reason)), 0);
	assert_int_equal(mb_fit_shortfalls(&m, &c, &h, &d, alone, sizeof(alone)), 0);
	assert_non_null(would = strstr(reason, "; would fit: "));
	*would = '\0';
	assert_string_equal(alone, reason + strlen("does not fit: "));
	assert_says("the host buffers need 53.9 GiB");
	assert_says("and the --device-mem-limit is 4.00 GiB");

	assert_int_equal(mb_fit_shortfalls(&m, &c, NULL, &d, alone, sizeof(alone)), 0);
	assert_null(strstr(alone, "host buffers"));
	assert_string_equal(alone, strstr(reason, "the device peak"));
	assert_int_equal(mb_fit_shortfalls(&m, &c, &h, NULL, alone, sizeof(alone)), 0);
	assert_null(strstr(alone, "device"));
	assert_true(!strncmp(alone, "the host buffers need 53.9 GiB", 30));
	assert_int_equal(mb_fit_shortfalls(&m, &c, NULL, NULL, alone, sizeof(alone)), 1);
	assert_string_equal(alone, "");
	mb_model_release(&m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(tiny_fits),
		cmocka_unit_test(host_short),
		cmocka_unit_test(ranks_share_the_host),
		cmocka_unit_test(device_short),
		cmocka_unit_test(clblast_temporaries),
		cmocka_unit_test(clblast_per_model),
		cmocka_unit_test(device_allocation_short),
		cmocka_unit_test(pinned_short),
		cmocka_unit_test(cpu_device),
		cmocka_unit_test(peaks_as_measured),
		cmocka_unit_test(pass_short),
		cmocka_unit_test(nothing_fits),
		cmocka_unit_test(bad_plan),
		cmocka_unit_test(meminfo),
		cmocka_unit_test(exact_fit),
		cmocka_unit_test(shortfalls_alone),
	};

	return cmocka_run_group_tests_name("fit", tests, NULL, NULL);
}

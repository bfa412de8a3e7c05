/*
 * options: the option table, its parser and the help it prints.
 */
#include "options.h"

#include <ctype.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "mb_config.h"
#include "mb_dsconfig.h"
#include "mb_err.h"
#include "mb_gemm16.h"
#include "mb_grid.h"
#include "mb_num.h"
#include "mb_variant.h"

enum kind {
	FLAG,	/* bool, no value */
	TEXT,	/* const char * */
	CHOICE, /* const char *, one of choices */
	ENUM,	/* an enum: the index of the value among choices (a list's words, mb_words.h) */
	COUNT,	/* uint64_t, a whole number */
	SIZE,	/* uint64_t, bytes with an optional unit */
	SIZES,	/* struct mb_u64_list: SIZEs separated by commas (a sweep) */
	COUNTS, /* struct mb_u64_list: COUNTs separated by commas */
	REAL,	/* double, in [min, max] */
	/* lists kept as text for the command to read, each item checked here: */
	SHAPES, /* const char *: RxC items */
	RANGES, /* const char *: SIZE or A..B items (doubling from A), in [min, max] */
	WORDS,	/* const char *: items of choices */
	REALS,	/* const char *: decimal numbers */
};

#define ON(c)	   (1u << (c))
#define ALL	   ((1u << MB_NCOMMANDS) - 1)
#define MODEL_CMDS (ON(MB_CMD_RUN) | ON(MB_CMD_PLAN) | ON(MB_CMD_PREDICT) | ON(MB_CMD_ADVISE))
/* the variants' step, run or modelled */
#define STEP_CMDS   (ON(MB_CMD_RUN) | ON(MB_CMD_PREDICT) | ON(MB_CMD_ADVISE))
#define SHAPE_CMDS  (MODEL_CMDS | ON(MB_CMD_TUNE)) /* the model's shapes, not its plan */
#define DEVICE_CMDS (ON(MB_CMD_RUN) | ON(MB_CMD_NS) | ON(MB_CMD_PROFILE))
#define MEMORY_CMDS (DEVICE_CMDS | ON(MB_CMD_BANDWIDTH) | ON(MB_CMD_TUNE)) /* bind, allocate */

struct option {
	const char *name; /* without the leading -- */
	const char *arg;  /* the value's name in help; NULL for a flag */
	enum kind kind;
	size_t offset;	     /* into struct mb_args */
	const char *def;     /* default, as typed by a user; NULL: none */
	uint64_t min, max;   /* COUNT and SIZE */
	const char *choices; /* CHOICE: "on|off"; ENUM: MB_WORDS(MB_FORMATS) */
	unsigned commands;   /* ON(command) for each that takes it */
	const char *help;
};

#define AT(field) offsetof(struct mb_args, field)

static const struct option options[] = {
	{ "model", "NAME", TEXT, AT(model), "qwen3-4b", 0, 0, NULL, SHAPE_CMDS,
	  "built-in model shape, listed below" },
	{ "config", "FILE", TEXT, AT(config), NULL, 0, 0, NULL, SHAPE_CMDS,
	  "model shape from a JSON file instead: a Hugging Face config.json or a "
	  "parameter list (see docs/models.md)" },
	{ "ds-config", "FILE", TEXT, AT(ds_config), NULL, 0, 0, NULL, MODEL_CMDS,
	  "set the options that a DeepSpeed config JSON names: zero_optimization's stage "
	  "(--stage; 1, 2 or 3), sub_group_size, reduce_bucket_size and "
	  "offload_optimizer.pin_memory (its device must be cpu), gradient_clipping "
	  "(--grad-clip), bf16.enabled (false: --momentum-dtype fp32), fp16.enabled (true "
	  "is refused), train_micro_batch_size_per_gpu (--micro-batch); options given here "
	  "win, \"auto\" keeps muonbench's default, keys not used are listed" },
	{ "layers", "N", COUNT, AT(layers), NULL, 1, 1u << 16, NULL, SHAPE_CMDS,
	  "keep only the first N decoder layers" },
	{ "stage", "S", TEXT, AT(stages), "2", 0, 0, NULL, MODEL_CMDS,
	  "ZeRO stage: 1, 2 or 3 (run and predict take a list: 2,3)" },
	{ "gather-budget", "SIZE", SIZES, AT(gather_budgets), "512Mi", 1, UINT64_MAX, NULL,
	  MODEL_CMDS,
	  "stage 1/2 (and 3 under --zero3-apply batched): most device bytes of one Muon "
	  "batch: its fp32 grads and momentum (fp32 or bf16, --momentum-dtype), under stage 3 "
	  "also the bf16 copy of its grads; a list (128Mi,512Mi,2Gi) is swept: each value a "
	  "cell of its own" },
	{ "sub-group-size", "N", COUNTS, AT(sub_group_sizes), "1e9", 1, UINT64_MAX, NULL,
	  MODEL_CMDS,
	  "stage 3: elements in a sub-group (DeepSpeed's sub_group_size); a list "
	  "(2.5e8,1e9) is swept: each value a cell of its own" },
	{ "reduce-bucket-size", "N", COUNT, AT(reduce_bucket_size), "5e8", 1, UINT64_MAX, NULL,
	  MODEL_CMDS,
	  "elements of the backward's bf16 gradient bucket (DeepSpeed's "
	  "zero_optimization.reduce_bucket_size): ZeRO-1/2's allocated in the backward, "
	  "ZeRO-3's held in every phase, as stage3.py's ipg_buckets are" },
	{ "grad-clip", "X", REAL, AT(grad_clip), "1.0", 0, 1000000, NULL, ON(MB_CMD_RUN),
	  "the largest norm of the gradients (DeepSpeed's gradient_clipping, as "
	  "unscale_and_clip_grads applies it: a pass over the whole fp32 grad buffer each "
	  "step); 0: no clipping, the pass stays" },
	{ "param-order", MB_WORDS(MB_PARAM_ORDERS), ENUM, AT(param_order), "shape", 0, 0,
	  MB_WORDS(MB_PARAM_ORDERS), MODEL_CMDS,
	  "order of the Muon parameters that the batches and sub-groups are made of: by "
	  "shape, largest first, as DeepSpeed's Muon builds its param group "
	  "(original_muon.py), or the model's" },
	{ "momentum-dtype", MB_WORDS(MB_MOMENTUM_DTYPES) "|auto", ENUM, AT(momentum_dtype), "auto",
	  0, 0, MB_WORDS(MB_MOMENTUM_DTYPES) "|auto", MODEL_CMDS,
	  "the Muon momentum's storage (math in fp32); auto: fp32 for ZeRO-1/2, bf16 for "
	  "ZeRO-3, which keeps it in the communication dtype under bf16 training (stage3.py, "
	  "_create_momentum_buffer)" },
	{ "params-back", MB_WORDS(MB_PARAMS_BACKS) "|auto", ENUM, AT(params_back), "auto", 0, 0,
	  MB_WORDS(MB_PARAMS_BACKS) "|auto", MODEL_CMDS,
	  "how the bf16 params go back to the device: from the pinned staging the host "
	  "optimizer writes (stage_1_and_2.py), or a host cast into pageable memory and a "
	  "blocking H2D, as ZeRO-3's copy_ from the fp32 params (stage3.py); auto: pageable "
	  "for ZeRO-3, pinned for ZeRO-1/2" },
	{ "zero3-apply", MB_WORDS(MB_ZERO3_APPLIES), ENUM, AT(zero3_apply), "subgroup", 0, 0,
	  MB_WORDS(MB_ZERO3_APPLIES), MODEL_CMDS,
	  "stage 3's Muon apply: a whole sub-group gathered at once, then each matrix's "
	  "update written back, as DeepSpeed's _apply_muon_updates_cpu_offload (stage3.py); "
	  "or batched: in batches under --gather-budget within each sub-group, as ZeRO-1/2's "
	  "apply" },
	{ "pin-chunk", "SIZE", SIZE, AT(pin_chunk), "2Gi", 4096, UINT64_MAX, NULL, MODEL_CMDS,
	  "most bytes of one pinned chunk of a host buffer, cut between parameters (also "
	  "at most the device's largest allocation)" },
	{ "variant", "V", TEXT, AT(variants), "all", 0, 0, NULL, STEP_CMDS,
	  MB_VARIANT_WORDS ", or all; a list runs each (pin,both)" },
	{ "runs", "R", COUNT, AT(runs), "3", 1, 1000, NULL, ON(MB_CMD_RUN) | ON(MB_CMD_ADVISE),
	  "runs of each cell (a stage, a variant and a value of each swept list; advise "
	  "--confirm: of each point it runs)" },
	{ "steps", "S", COUNT, AT(steps), "7", 1, 1000, NULL, ON(MB_CMD_RUN) | ON(MB_CMD_ADVISE),
	  "steps of each run" },
	{ "measure", "A-B", TEXT, AT(measure), NULL, 0, 0, NULL, ON(MB_CMD_RUN),
	  "the steps whose mean is a run's figure (default: 2-6, cut to the steps run)" },
	{ "pin-memory", "on|off", CHOICE, AT(pin_memory), "on", 0, 0, "on|off", STEP_CMDS,
	  "offload_optimizer.pin_memory: pin the buffers that cross the bus" },
	{ "pinned-alloc", MB_WORDS(MB_PINNED_ALLOCS), ENUM, AT(pinned_alloc), "auto", 0, 0,
	  MB_WORDS(MB_PINNED_ALLOCS), MEMORY_CMDS,
	  "how pinned host memory is made: alloc-host-ptr, a mapped CL_MEM_ALLOC_HOST_PTR "
	  "buffer (NVIDIA's OpenCL also takes its size in device memory); nv, NVIDIA's "
	  "clCreateBufferNV, pinned without that copy, as the CUDA runtime pins; auto: nv "
	  "where the platform has it, else alloc-host-ptr" },
	{ "pinned-device-copy", "auto|yes|no", CHOICE, AT(pinned_device_copy), "auto", 0, 0,
	  "auto|yes|no", ON(MB_CMD_RUN) | ON(MB_CMD_PLAN),
	  "whether the driver also keeps pinned host memory in device memory (NVIDIA's OpenCL "
	  "does, for a mapped CL_MEM_ALLOC_HOST_PTR buffer): counted beside the device peak by "
	  "the fit check and in the rows' pinned_device_copy_bytes; auto: run measures it where "
	  "the driver gives its used memory (device_used_*), else unknown and not counted; plan "
	  "counts it only when told yes" },
/* mb_knob's table: each knob an option of the step's commands */
#define KNOB_OPTION_(id, field, option, words, dflt, since, help) \
	{ option, words, CHOICE, AT(knob[MB_KNOB_##id]), dflt, 0, 0, words, STEP_CMDS, help },
	MB_STEP_KNOBS(KNOB_OPTION_)
#undef KNOB_OPTION_
		{ "fwd-bwd", "on|off", CHOICE, AT(fwd_bwd), "on", 0, 0, "on|off", MODEL_CMDS,
		  "run a synthetic forward and backward (GEMMs on the model's shapes, gradient "
		  "checkpointing) before each step's gradients" },
	{ "seq", "T", COUNT, AT(seq), "2048", 1, 1u << 20, NULL, MODEL_CMDS,
	  "sequence length of the synthetic forward/backward" },
	{ "micro-batch", "B", COUNT, AT(micro_batch), "1", 1, 1u << 16, NULL, MODEL_CMDS,
	  "micro-batch size of the synthetic forward/backward" },
	{ "resume-at", "K", COUNT, AT(resume_at), NULL, 1, 1000, NULL, ON(MB_CMD_RUN),
	  "after step K, save the optimizer state and load it back into new pageable "
	  "buffers, as a checkpoint load does" },
	{ "fit-check", "on|off", CHOICE, AT(fit_check), "on", 0, 0, "on|off", ON(MB_CMD_RUN),
	  "before each cell, hold the host and device bytes of its plan against the host's "
	  "available memory and the device's memory and largest allocation; a cell that "
	  "cannot fit fails at once, saying what would (off: run it, and fail where memory "
	  "runs out)" },
	{ "interleave", "on|off", CHOICE, AT(interleave), "on", 0, 0, "on|off", ON(MB_CMD_RUN),
	  "the cells take turns, one run each (run 1 of every cell, then run 2, ...), so "
	  "that a change in the machine's speed during the invocation falls on every cell "
	  "alike (off: each cell's runs back to back, cell after cell)" },
	{ "quiet", NULL, FLAG, AT(quiet), NULL, 0, 0, NULL, ON(MB_CMD_RUN),
	  "no progress on stderr (the progress line shows only on a terminal anyway)" },
	{ "cpus", "LIST", TEXT, AT(cpus), NULL, 0, 0, NULL, MEMORY_CMDS,
	  "run on these CPUs, as numactl -C LIST (default: as inherited)" },
	{ "membind", "NODES", TEXT, AT(membind), NULL, 0, 0, NULL, MEMORY_CMDS,
	  "allocate host memory on these NUMA nodes, as numactl -m NODES (default: as "
	  "inherited)" },
	{ "numa", "auto|off", CHOICE, AT(numa), "off", 0, 0, "auto|off", MEMORY_CMDS,
	  "auto: run and allocate on the NUMA node of the device's PCI slot, where the "
	  "driver gives its PCI address and sysfs its node; else say so and leave the "
	  "binding as it is" },
	{ "out", "FILE", TEXT, AT(out), NULL, 0, 0, NULL,
	  ON(MB_CMD_RUN) | ON(MB_CMD_PROFILE) | ON(MB_CMD_ADVISE),
	  "run: append the results to FILE (default: a new "
	  "results/MODEL-stageS-UTCTIME.csv, or -2.csv and on where that is taken); profile: write the profile to FILE (default: the "
	  "cache, under the device's key); advise: write the best point's DeepSpeed config "
	  "patch to FILE (default: after the table)" },
	{ "world-size", "W", COUNT, AT(world_size), "1", 1, 1u << 20, NULL, MODEL_CMDS,
	  "ranks sharing the optimizer state (run under MPI: the MPI world's; predict: all on one "
	  "host)" },
	{ "rank", "R", COUNT, AT(rank), "0", 0, (1u << 20) - 1, NULL, MODEL_CMDS,
	  "the rank planned, predicted or run, 0 to W-1 (under MPI: MPI's)" },
	{ "format", "FMT", ENUM, AT(format), "md", 0, 0, MB_WORDS(MB_FORMATS),
	  ON(MB_CMD_PLAN) | ON(MB_CMD_REPORT) | ON(MB_CMD_RUN) | ON(MB_CMD_BANDWIDTH) |
		  ON(MB_CMD_NS) | ON(MB_CMD_PREDICT) | ON(MB_CMD_ADVISE),
	  "output: Markdown tables, CSV rows or JSON" },
	{ "shape", "RxC,...", SHAPES, AT(shapes), NULL, 0, 0, NULL,
	  ON(MB_CMD_NS) | ON(MB_CMD_TUNE) | ON(MB_CMD_PROFILE),
	  "matrix shapes to orthogonalize (default: ns " MB_NS_DEFAULT_SHAPES
	  "; profile " MB_PROFILE_DEFAULT_SHAPES "; tune the model's)" },
	{ "ns-method", MB_WORDS(MB_NS_METHODS), ENUM, AT(ns_method), "gram", 0, 0,
	  MB_WORDS(MB_NS_METHODS), MODEL_CMDS | ON(MB_CMD_NS),
	  "Newton-Schulz: DeepSpeed's default, on the Gram matrix with a restart at iteration "
	  "2 (zeropower_via_gram_newtonschulz, original_muon.py; the standard iteration on "
	  "square matrices), or the standard quintic (zeropower_via_newtonschulz5); ns times "
	  "both unless it is given" },
	{ "ns-precision", "P[,P...]", WORDS, AT(ns_precisions), "auto", 0, 0,
	  MB_WORDS(MB_PRECISIONS) "|auto",
	  ON(MB_CMD_NS) | ON(MB_CMD_RUN) | ON(MB_CMD_PROFILE) | ON(MB_CMD_PLAN),
	  "the precision of Newton-Schulz's GEMMs: fp32 (CLBlast's SGEMM), bf16 or fp16 (our "
	  "kernel, kernels/ns_gemm.cl: 16-bit inputs, fp32 accumulation, 16-bit results; on "
	  "tensor cores through mma.sync on NVIDIA sm_80 and up once it matches the portable "
	  "kernel there, else portable), or auto: what DeepSpeed runs where the device has the "
	  "tensor-core path (gram fp16, standard bf16), else fp32 (PoCL included); ns takes a "
	  "list and times it side by side, the others one" },
	{ "ns-rate", "GFLOPS", COUNT, AT(ns_rate), NULL, 1, 1000000000, NULL, ON(MB_CMD_RUN),
	  "calibrated mode: Newton-Schulz replaced by a kernel that keeps the compute queue "
	  "busy for the time its FLOPs take at this rate (GFLOP/s; PyTorch's fp16 Gram on an "
	  "H200: 505000), so that a run has real copies and overlap and the framework's "
	  "Newton-Schulz time; the update is the momentum-corrected gradient, not "
	  "orthogonalized (rows: ns_precision calibrated, ns_rate_gflops)" },
	{ "batch", "N", COUNT, AT(batch), "1", 1, 1u << 16, NULL, ON(MB_CMD_NS),
	  "matrices of each shape in one timed run" },
	{ "reps", "N", COUNT, AT(reps), "5", 1, 1u << 16, NULL,
	  ON(MB_CMD_NS) | ON(MB_CMD_BANDWIDTH) | ON(MB_CMD_PROFILE),
	  "timed runs of each shape or copy, after a warm-up" },
	{ "sizes", "LIST", RANGES, AT(sizes), "4Ki..1Gi", 1, UINT64_MAX, NULL, ON(MB_CMD_BANDWIDTH),
	  "copy sizes: sizes and doubling ranges A..B, comma-separated (4Ki..1Mi,256Mi)" },
	{ "verify", NULL, FLAG, AT(verify), NULL, 0, 0, NULL, ON(MB_CMD_NS),
	  "compare each result with a float64 host reference of the same method; fail above "
	  "1e-4 relative Frobenius error in fp32, 1e-2 in fp16, 5e-2 in bf16 (twice the error "
	  "that 16-bit Newton-Schulz was measured to have)" },
	{ "tuning", "off|auto|FILE", TEXT, AT(tuning), "auto", 0, 0, NULL,
	  DEVICE_CMDS | ON(MB_CMD_ADVISE),
	  "CLBlast's kernel parameters: auto applies the tuning made for this device (from "
	  "muonbench tune, else shipped), else one of the same platform, driver and "
	  "architecture, else one of the same platform and device type once it passes ns "
	  "--verify here (checked once, in a child), else CLBlast's defaults; off keeps "
	  "CLBlast's own; or a tuning file made for this device" },
	{ "time-budget", "DURATION", TEXT, AT(time_budget), "10m", 0, 0, NULL, ON(MB_CMD_TUNE),
	  "the longest the tuners may take, all together (the checks of what they found come "
	  "after): 90s, 10m, 1h" },
	{ "seed", "N", COUNT, AT(seed), "1", 0, UINT64_MAX, NULL, DEVICE_CMDS,
	  "seed of the random numbers" },
	{ "platform", "P", COUNT, AT(platform), NULL, 0, 63, NULL, MEMORY_CMDS | ON(MB_CMD_ADVISE),
	  "OpenCL platform index (see muonbench devices)" },
	{ "device", "D", TEXT, AT(device), NULL, 0, 0, NULL, MEMORY_CMDS | ON(MB_CMD_ADVISE),
	  "device index on the platform, or part of its name (default: the first GPU, "
	  "else the first device)" },
	{ "device-mem-limit", "SIZE", SIZE, AT(device_mem_limit), NULL, 1, UINT64_MAX, NULL,
	  DEVICE_CMDS | ON(MB_CMD_ADVISE),
	  "refuse device allocations past SIZE, as if the device had no more memory (advise: "
	  "the device memory each point must fit)" },
	{ "alpha", "A", REAL, AT(alpha), "0.01", 0, 1, NULL, ON(MB_CMD_COMPARE),
	  "significance of the Mann-Whitney test for a timing to count as changed" },
	{ "threshold", "PCT", REAL, AT(threshold), "5", 0, 1000, NULL, ON(MB_CMD_COMPARE),
	  "the smallest slowdown, in percent of the baseline's timing, that is a regression" },
	{ "phase-floor", "PCT", REAL, AT(phase_floor), "5", 0, 1000, NULL, ON(MB_CMD_COMPARE),
	  "a phase moves a cell's verdict only when its change is also larger than PCT percent "
	  "of the cell's Muon apply time (the iteration and the apply always count)" },
	{ "noise-factor", "X", REAL, AT(noise_factor), "4", 0, 1000, NULL, ON(MB_CMD_COMPARE),
	  "a change is flagged only when also larger than X times the runs' own spread: "
	  "under --estimate fastest, how far apart the fastest steps of a cell's odd-numbered "
	  "and even-numbered runs are (the median over a file's cells, the larger of the two "
	  "files'); under median, the standard error of the difference (the baseline's runs' "
	  "medians' standard deviation over their median, times sqrt(1/base runs + 1/new "
	  "runs))" },
	{ "estimate", MB_WORDS(MB_ESTIMATES), ENUM, AT(estimate), "median", 0, 0,
	  MB_WORDS(MB_ESTIMATES), ON(MB_CMD_COMPARE),
	  "what a cell's timing is taken as: its fastest step over all runs (what the machine "
	  "slowed least: the steadier where most runs reach the machine's quiet level, the "
	  "less steady where few do; blind to a slowdown that spares the fastest steps), or "
	  "the median of its steps (each phase: of its runs)" },
	{ "ratios", NULL, FLAG, AT(ratios), NULL, 0, 0, NULL, ON(MB_CMD_COMPARE),
	  "compare each timing as a ratio to master's in the same file and stage (under "
	  "the median, each run over master's run of the same round; under the fastest, "
	  "over master's fastest): what survives a slower or busier machine" },
	{ "exact", NULL, FLAG, AT(exact), NULL, 0, 0, NULL, ON(MB_CMD_COMPARE),
	  "a changed exact figure (peak memory, checksum, plan) fails too, as a regression "
	  "does" },
	{ "allow-device-change", NULL, FLAG, AT(allow_device_change), NULL, 0, 0, NULL,
	  ON(MB_CMD_COMPARE), "compare results from different devices or drivers" },
	{ "o", "IMAGE", TEXT, AT(image), NULL, 0, 0, NULL, ON(MB_CMD_PLOT),
	  "the chart to write: IMAGE.svg or IMAGE.png (with IMAGE.dat and IMAGE.gp beside)" },
	{ "profile", "NAME|FILE", TEXT, AT(profile), NULL, 0, 0, NULL, STEP_CMDS,
	  "the device profile the model predicts from: a shipped one (reference: the reference "
	  "change's machine, docs/predict.md) or a FILE.json; run: off predicts "
	  "nothing (default: predict reference; run the device's own, which muonbench profile "
	  "measured, if any)" },
	{ "confirm", NULL, FLAG, AT(confirm), NULL, 0, 0, NULL, ON(MB_CMD_ADVISE),
	  "run the baseline and the two best points on the device (--runs runs of --steps "
	  "steps each, the points taking turns) and print the measured beside the predicted; "
	  "the advice stands if the measured order of the iterations agrees" },
	{ "if-missing", NULL, FLAG, AT(if_missing), NULL, 0, 0, NULL, ON(MB_CMD_PROFILE),
	  "measure only when the file is not there yet, or is of an older format (the "
	  "cache's: or damaged) (make run uses it)" },
#define PREDICT_OPTION(id, name, key, key2, help)                                       \
	{ name,                                                                         \
	  "X[,X...]",                                                                   \
	  MB_PF_##id == MB_PF_HOLDS || MB_PF_##id == MB_PF_PEER_PCIE ? WORDS : REALS,   \
	  AT(profile_flags[MB_PF_##id]),                                                \
	  NULL,                                                                         \
	  0,                                                                            \
	  0,                                                                            \
	  MB_PF_##id == MB_PF_HOLDS || MB_PF_##id == MB_PF_PEER_PCIE ? "on|off" : NULL, \
	  ON(MB_CMD_PREDICT),                                                           \
	  help "; a list sweeps it" },
	MB_PREDICT_FLAGS(PREDICT_OPTION)
#undef PREDICT_OPTION
		{ "help", NULL, FLAG, AT(help), NULL, 0, 0, NULL, ALL, "print this help and exit" },
	{ "version", NULL, FLAG, AT(version), NULL, 0, 0, NULL, ALL,
	  "print the version and the git revision and exit" },
};

#define NOPTIONS (sizeof(options) / sizeof(options[0]))
_Static_assert(NOPTIONS <= MB_OPTIONS_MAX, "struct mb_args' given has a bit per option");
/* an ENUM option's field is written as an unsigned */
_Static_assert(sizeof(enum mb_format) == sizeof(unsigned) &&
		       sizeof(enum mb_param_order) == sizeof(unsigned) &&
		       sizeof(enum mb_momentum_dtype) == sizeof(unsigned) &&
		       sizeof(enum mb_params_back) == sizeof(unsigned) &&
		       sizeof(enum mb_zero3_apply) == sizeof(unsigned) &&
		       sizeof(enum mb_pinned_alloc) == sizeof(unsigned) &&
		       sizeof(enum mb_ns_method) == sizeof(unsigned) &&
		       sizeof(enum mb_estimate) == sizeof(unsigned),
	       "the ENUM options' enums are the size of an unsigned");

static void set_given(struct mb_args *args, size_t i)
{
	args->given[i / 64] |= 1ull << (i % 64);
}

static bool is_given(const struct mb_args *args, size_t i)
{
	return args->given[i / 64] & (1ull << (i % 64));
}

struct command {
	const char *name, *summary, *description;
};

static const struct command commands[MB_NCOMMANDS] = {
	[MB_CMD_RUN] = { "run", "run the offload benchmark (the default command)",
			 "Replays one rank's training step under CPU optimizer offload "
			 "(backward stand-in, Muon apply, host optimizer, params back) on an "
			 "OpenCL device, for each cell asked (a stage, a variant and a value of "
			 "each swept list), R runs of S steps each, the cells taking turns. "
			 "Writes one CSV row per run and prints the reference's table; "
			 "checks that every variant ends in the same state, bit for bit. A cell "
			 "whose plan cannot fit the host or the device fails at once, saying "
			 "what would fit." },
	[MB_CMD_PLAN] = { "plan", "what a run would allocate, copy and compute, without a device",
			  "Prints the parameter counts, the host buffers of this rank, the "
			  "Muon batches (stage 1/2) or sub-groups (stage 3), the bytes that "
			  "cross the bus and the Newton-Schulz FLOPs per step, and the "
			  "predicted peak device memory of the step phase." },
	[MB_CMD_DEVICES] = { "devices", "list the OpenCL platforms and devices",
			     "Lists every OpenCL platform and device with the indices "
			     "that select it, its name, vendor, driver version, global "
			     "memory, compute units, largest allocation, whether it "
			     "has cl_khr_fp16, and its PCI address and NUMA node where the "
			     "driver and sysfs tell them (what --numa auto binds to)." },
	[MB_CMD_REPORT] = { "report", "the reference's tables from results files",
			    "Reads results files (FILE.csv ...) and prints the reference's tables: "
			    "iteration and Muon apply time per stage and variant with the change "
			    "against master, peak device memory overall and per phase, and the "
			    "time of each phase. Rows from different devices, hosts, models or "
			    "knobs are never pooled: they make separate tables. A failed run shows "
			    "as failed, with its reason." },
	[MB_CMD_COMPARE] = { "compare", "a new results file against a baseline: the CI gate",
			     "Compares NEW.csv against BASE.csv cell by cell (model, stage, "
			     "variant and every knob must match). Timings: the change of the "
			     "median (or the fastest step, --estimate) and a two-sided "
			     "Mann-Whitney U test on the per-step samples (iteration, apply) or "
			     "the runs (each phase); a regression is a slowdown that is "
			     "significant and beyond both the threshold and the noise floor "
			     "(--noise-factor times the runs' own spread). Exact "
			     "figures that the plan and the math fix (parameter counts, pinned "
			     "bytes, the plan's step peak, the peaks without CLBlast's "
			     "temporaries, the checksum) are compared on any device; CLBlast's "
			     "temporaries and the whole peaks only on the same device and "
			     "tuning, and shown otherwise. Any difference compared is reported, "
			     "a rise in a peak is a regression. Exits 1 on a regression, when "
			     "no cell matched or when every cell that matched has no ok run in "
			     "one file or both, 2 on bad input." },
	[MB_CMD_BANDWIDTH] = { "bandwidth", "host-device copy bandwidth, pageable against pinned",
			       "Times copies of each size host to device (H2D), device to host "
			       "(D2H) and both at once, from pageable and from pinned host "
			       "memory: after a warm-up, REPS copies each, timed by the device's "
			       "events (first start to last end) and by the host clock around "
			       "enqueue and finish. Both at once: each direction from a host "
			       "thread and on a queue of its own, each copy started with the "
			       "other's (from one thread, a driver whose pageable copies are "
			       "synchronous would run them in turn). Prints the median GB/s "
			       "(10^9 bytes a second; both directions count the bytes of both) "
			       "with min, max and the coefficient of variation, the host clock's "
			       "median, and events / host: a pageable ratio well above the pinned "
			       "one says that the driver's events leave out its staging of "
			       "pageable memory, and the host clock's rate is what such a copy "
			       "costs. A copy more than 4 times as fast as the host's own memcpy "
			       "of that size moved nothing (a zero-copy mapping) and is flagged, "
			       "not reported as bandwidth. An event time the driver cannot give "
			       "is n/a (empty in CSV, null in JSON), never 0; the command then "
			       "says why and exits 1. Host buffers are page-aligned and first "
			       "touched by the bound threads, so --membind, numactl or --numa "
			       "auto places them." },
	[MB_CMD_TUNE] = { "tune", "tune CLBlast's GEMM kernels for the device, with its own tuners",
			  "Runs CLBlast's tuners (clblast-utils) for the device: the indirect "
			  "GEMM kernel at the largest GEMM that Newton-Schulz issues for the model "
			  "(or --shape), the direct GEMM kernel at the smallest, the copy, pad and "
			  "transpose kernels the indirect GEMM uses, and the routine tuner that "
			  "picks direct against indirect GEMM; each gets a share of "
			  "--time-budget and searches more of its space while time is left. Each "
			  "kernel's best parameters are checked with muonbench ns --verify (a "
			  "float64 host reference) and dropped if they fail to compile or give "
			  "wrong results; the rest are stored in the cache under the device's "
			  "key, where --tuning auto finds them." },
	[MB_CMD_PLOT] = { "plot", "a chart of results files, drawn by gnuplot",
			  "Draws grouped bars of iteration and Muon apply time per stage and "
			  "variant, with the spread of the runs, and stacked bars of the apply's "
			  "phases; given a sweep from predict --format csv, each cell's predicted "
			  "iteration and apply along the swept field. The data and the gnuplot "
			  "script are written beside the image, to edit and draw again. Exits 0 "
			  "once the chart is drawn, 1 when gnuplot fails (the data, the script "
			  "and a new image removed), 2 on bad input or without gnuplot (the data "
			  "and script kept, to draw later)." },
	[MB_CMD_PREDICT] = { "predict",
			     "what a run would measure, from a device profile, without a device",
			     "Runs the step's schedule as a discrete-event model (the compute "
			     "queue, the copy queue and the host thread; the plan's batches or "
			     "sub-groups; the variants' pinning and overlap, as run enqueues and "
			     "waits) on the device that a profile describes: copy rates pinned, "
			     "pageable and both ways at once, whether pageable copies hold the "
			     "host, Newton-Schulz GFLOP/s, the elementwise kernels', the "
			     "forward/backward's and the host's rates. Prints the reference's "
			     "tables (iteration, Muon apply, the plan's peak device memory, the "
			     "change against master) and the time of each phase, for each stage "
			     "and variant asked. Options set any field of the profile; a list "
			     "(--pageable-gbs 5,10,20,40) sweeps it, a table for each value. An "
			     "option that sets one field wins over a wider one that sets it with "
			     "others (--pageable-h2d-gbs over --pageable-gbs), given or swept. "
			     "Needs no device." },
	[MB_CMD_PROFILE] = { "profile", "measure the device profile that predict and run use",
			     "Measures a device profile on the selected device in under a minute "
			     "with the benchmark's own instruments: 64 MiB copies each way and "
			     "both at once, pinned (by the device's events) and pageable (by the "
			     "host clock, which a caller waits), memcpy and a 4 KiB copy's "
			     "latency; a pageable copy beside a kernel on the other queue: whether "
			     "its enqueue holds the host for its length, and what part of its time "
			     "the kernel cannot hide; then, in "
			     "4 x --reps interleaved rounds (the larger shapes in fewer, 4 at least; "
			     "all of them held to about 10 s x --reps whatever the shapes, a slow "
			     "shape timed in fewer, as the output says with the time taken), each "
			     "charged at its total work over its total time (the mean of its "
			     "times, which a run's mean step reflects): Newton-Schulz by each "
			     "method on each --shape, a point of its ladder (default " MB_PROFILE_DEFAULT_SHAPES
			     "), the forward/backward's rate "
			     "from the last one's GEMMs alone, the momentum kernel, the bf16 cast "
			     "and the norm's sums (with the kernel the step runs on the device) by "
			     "their events, the gradient fill and the host optimizer's loops by "
			     "the host clock. Prints it as JSON and "
			     "keeps it in the cache under the device's key, beside its tuning "
			     "($XDG_CACHE_HOME/muonbench/profile-KEY.json), or in --out FILE; "
			     "run shows each cell's prediction from it." },
	[MB_CMD_ADVISE] = { "advise",
			    "what to change in a DeepSpeed config's offload, and what it buys",
			    "Reads the offload settings of a DeepSpeed config (--ds-config: the "
			    "stage, offload_optimizer.pin_memory, sub_group_size, "
			    "reduce_bucket_size) as the baseline and sweeps, in predict's model "
			    "on a device profile, what a user can change and the step reads: "
			    "pin_memory on and off, the writeback variants (each with the "
			    "DeepSpeed change it needs), the Muon gather budget, and under ZeRO-3 "
			    "the sub_group_size and the apply by sub-group or batched; an option "
			    "given here fixes its setting (a list: sweeps those values). Each "
			    "point is checked against the device's and the host's memory where "
			    "the profile is this device's (else against --device-mem-limit): "
			    "what does not fit is dropped, and said. Prints the baseline and the "
			    "best points (predicted iteration and apply, the change against the "
			    "baseline, peak device memory, pinned host memory) and the best "
			    "point's DeepSpeed config as a JSON patch (to --out FILE, or after "
			    "the table). Without --profile it predicts from the device's own "
			    "profile, else the reference's, and says so. With --confirm the "
			    "baseline and the two best points run on the device and the measured "
			    "figures stand beside the predicted. Exits 2 when the config is bad, "
			    "offloads nothing, or nothing fits." },
	[MB_CMD_NS] = { "ns", "time Newton-Schulz on the device against its own GEMMs",
			"Runs Newton-Schulz on fresh random matrices of each shape and prints "
			"the median time over the reps with its min and max (device time "
			"from the commands' own events, after a warm-up that covers kernel "
			"compilation), "
			"GFLOP/s counted as 5 (4m²n + 2m³) for the standard method and 8m²n + "
			"28m³ for the Gram method (m x n, m <= n; on a square matrix the Gram "
			"method runs the standard iteration), the time of the same GEMM calls "
			"alone in the same run, and the ratio of the two; for each shape, "
			"both methods on the same matrices unless --ns-method names one." },
};

const char *mb_command_name(enum mb_command c)
{
	return commands[c].name;
}

/*
 * The lists' one rule: each value once. A list's items, as the values they
 * stand for (A, B: a size, a count, a shape's rows and columns, a word's
 * index, a number's bits; a range A..B is an item for each of its sizes).
 */
#define ITEMS_MAX 256
struct item {
	const char *at; /* the item's text in the list, LEN bytes */
	size_t len;
	uint64_t a, b;
};

/* Refused (naming WHAT) where two of the N items of LIST are one value: 2Mi and 2097152. */
static int check_unique(const char *what, const char *list, const struct item *it, size_t n)
{
	size_t i, j;

	for (i = 0; i < n; i++)
		for (j = 0; j < i; j++) {
			if (it[i].a != it[j].a || it[i].b != it[j].b)
				continue;
			if (it[i].at == it[j].at ||
			    (it[i].len == it[j].len && !strncmp(it[i].at, it[j].at, it[i].len)))
				return mb_bad_input("%s: '%.*s' twice in '%s' (a list takes each "
						    "value once)",
						    what, (int)it[i].len, it[i].at, list);
			return mb_bad_input("%s: '%.*s' and '%.*s' are the same value in '%s' (a "
					    "list takes each value once)",
					    what, (int)it[j].len, it[j].at, (int)it[i].len,
					    it[i].at, list);
		}
	return 0;
}

/* The index of the LEN bytes at WORD among CHOICES ("on|off"), or -1. */
static int choice_index(const char *choices, const char *word, size_t len)
{
	const char *c;
	int i;

	for (c = choices, i = 0; c; c = strchr(c, '|') ? strchr(c, '|') + 1 : NULL, i++)
		if (len && len == strcspn(c, "|") && !strncmp(c, word, len))
			return i;
	return -1;
}

/*
 * ONE, item K of list option O (all of it LIST), as the values it stands for,
 * into IT[*n...]. A number that is not one is left to the command, which
 * says what its unit is: a value of its own, equal to none.
 */
static int list_item(const struct option *o, const char *one, size_t k, const char *list,
		     const char *what, struct item *it, size_t *n)
{
	uint64_t sizes[64];
	struct mb_shape shape;
	size_t i, m;
	double d;
	char *end;
	int err, w;

	switch (o->kind) {
	case SHAPES:
		if ((err = mb_parse_shapes(what, one, &shape, 1, &m)))
			return err;
		it[(*n)++] = (struct item){ .a = shape.rows, .b = shape.cols };
		return 0;
	case RANGES:
		if ((err = mb_parse_size_list(what, one, o->min, o->max, sizes, 64, &m)))
			return err;
		for (i = 0; i < m && *n < ITEMS_MAX; i++)
			it[(*n)++] = (struct item){ .a = sizes[i] };
		return i < m ? mb_bad_input("%s: more than %d values", what, ITEMS_MAX) : 0;
	case WORDS:
		if ((w = choice_index(o->choices, one, strlen(one))) >= 0)
			it[(*n)++] = (struct item){ .a = (uint64_t)w };
		else if (strchr(list, ','))
			return mb_bad_input(
				"%s: invalid value '%s' in '%s' (expected a list of %s)", what, one,
				list, o->choices);
		else
			return mb_bad_input("%s: invalid value '%s' (expected %s)", what, one,
					    o->choices);
		return 0;
	case REALS:
		d = strtod(one, &end);
		it[*n] = (struct item){ .a = UINT64_MAX, .b = k };
		if (mb_num_is_decimal(one) && !*end) {
			memcpy(&it[*n].a, &d, sizeof(d));
			it[*n].b = 0;
		}
		(*n)++;
		return 0;
	default:
		return mb_bad_input("%s: %s is not a list", what, o->name);
	}
}

/*
 * VALUE, a comma-separated list of O's items (SHAPES, RANGES, WORDS, REALS):
 * each checked, and each value once.
 */
static int check_text_list(const struct option *o, const char *value, const char *what)
{
	struct mb_shape shapes[ITEMS_MAX];
	uint64_t sizes[ITEMS_MAX];
	struct item it[ITEMS_MAX];
	size_t len, n = 0, first, k = 0;
	char one[64];
	int err;

	/* the whole list first, for the errors that name the item in it */
	if ((o->kind == SHAPES && (err = mb_parse_shapes(what, value, shapes, ITEMS_MAX, &n))) ||
	    (o->kind == RANGES &&
	     (err = mb_parse_size_list(what, value, o->min, o->max, sizes, ITEMS_MAX, &n))))
		return err;
	n = 0;
	for (const char *p = value;; p += len + 1, k++) {
		len = strcspn(p, ",");
		if (!len || len >= sizeof(one) || n == ITEMS_MAX)
			return mb_bad_input("%s: invalid list '%s' (expected values separated by "
					    "commas)",
					    what, value);
		memcpy(one, p, len);
		one[len] = '\0';
		first = n;
		if ((err = list_item(o, one, k, value, what, it, &n)))
			return err;
		for (; first < n; first++) {
			it[first].at = p;
			it[first].len = len;
		}
		if (!p[len])
			break;
	}
	return check_unique(what, value, it, n);
}

/* VALUE, a comma-separated list of O's SIZEs or COUNTs, into *LIST: each value once. */
static int parse_list(const struct option *o, const char *value, const char *what,
		      struct mb_u64_list *list)
{
	struct item it[MB_LIST_MAX];
	const char *p = value;
	char one[64];
	size_t len;
	int err;

	list->n = 0;
	list->text = value;
	for (;;) {
		len = strcspn(value, ",");
		if (list->n == MB_LIST_MAX)
			return mb_bad_input("%s: more than %d values", what, MB_LIST_MAX);
		if (!len || len >= sizeof(one))
			return mb_bad_input("%s: invalid list '%s' (expected values separated by "
					    "commas)",
					    what, p);
		memcpy(one, value, len);
		one[len] = '\0';
		if ((err = o->kind == SIZES
				   ? mb_parse_size(what, one, o->min, o->max, &list->v[list->n])
				   : mb_parse_count(what, one, o->min, o->max, &list->v[list->n])))
			return err;
		it[list->n] = (struct item){ value, len, list->v[list->n], 0 };
		list->n++;
		if (!value[len])
			return check_unique(what, p, it, list->n);
		value += len + 1;
	}
}

/* Set O's field from VALUE; errors start with WHAT ("--stage"). */
static int set_value(struct mb_args *args, const struct option *o, const char *value,
		     const char *what)
{
	void *field = (char *)args + o->offset;
	unsigned i;
	size_t n;
	const char *c;
	int err;

	switch (o->kind) {
	case FLAG:
		*(bool *)field = true;
		return 0;
	case TEXT:
		if (!*value)
			return mb_bad_input("%s: the value is empty", what);
		*(const char **)field = value;
		return 0;
	case CHOICE:
	case ENUM:
		n = strlen(value);
		for (c = o->choices, i = 0; c;
		     c = strchr(c, '|') ? strchr(c, '|') + 1 : NULL, i++) {
			if (!n || n != strcspn(c, "|") || strncmp(c, value, n))
				continue;
			if (o->kind == ENUM)
				*(unsigned *)field = i;
			else
				*(const char **)field = value;
			return 0;
		}
		return mb_bad_input("%s: invalid value '%s' (expected %s)", what, value,
				    o->choices);
	case COUNT:
		return mb_parse_count(what, value, o->min, o->max, field);
	case REAL: {
		char *end;
		double d = strtod(value, &end);

		/* decimal, as the whole numbers are: no space, sign, hex, inf or nan */
		if (!mb_num_is_decimal(value) || *end || mb_num_underflows(value, d) ||
		    !(d >= (double)o->min && d <= (double)o->max))
			return mb_bad_input("%s: invalid number '%s' (expected %llu to %llu)", what,
					    value, (unsigned long long)o->min,
					    (unsigned long long)o->max);
		*(double *)field = d;
		return 0;
	}
	case SIZE:
		return mb_parse_size(what, value, o->min, o->max, field);
	case SIZES:
	case COUNTS:
		return parse_list(o, value, what, field);
	case SHAPES:
	case RANGES:
	case WORDS:
	case REALS:
		if ((err = check_text_list(o, value, what)))
			return err;
		*(const char **)field = value;
		return 0;
	}
	return 0;
}

/* The dashes before O's name as typed: "-" for a one-letter option (plot's -o), else "--". */
static const char *dashes(const struct option *o)
{
	return o->name[1] ? "--" : "-";
}

static int set_option(struct mb_args *args, const struct option *o, const char *value)
{
	char what[64];

	snprintf(what, sizeof(what), "%s%s", dashes(o), o->name);
	return set_value(args, o, value, what);
}

static const struct option *find(const char *name, size_t len)
{
	size_t i;

	for (i = 0; i < NOPTIONS; i++)
		if (strlen(options[i].name) == len && !strncmp(options[i].name, name, len))
			return &options[i];
	return NULL;
}

static int set_defaults(struct mb_args *args)
{
	size_t i;
	int err;

	for (i = 0; i < NOPTIONS; i++)
		if (options[i].def && (err = set_option(args, &options[i], options[i].def)))
			return err;
	return 0;
}

static int parse_command(struct mb_args *args, int argc, char **argv, int *next)
{
	char names[128] = "";
	int c;

	args->command = MB_CMD_RUN;
	*next = 1;
	if (argc < 2 || argv[1][0] == '-')
		return 0;
	for (c = 0; c < MB_NCOMMANDS; c++) {
		if (!strcmp(argv[1], commands[c].name)) {
			args->command = c;
			*next = 2;
			return 0;
		}
	}
	for (c = 0; c < MB_NCOMMANDS; c++)
		snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s%s",
			 c ? ", " : "", commands[c].name);
	return mb_bad_input("unknown command '%s' (commands: %s; see muonbench --help)", argv[1],
			    names);
}

static bool takes_files(enum mb_command c)
{
	return c == MB_CMD_REPORT || c == MB_CMD_COMPARE || c == MB_CMD_PLOT;
}

/* A results file named on the command line: they come together. */
static int add_file(struct mb_args *args, char **argv, int i)
{
	if (!args->files)
		args->files = argv + i;
	if (args->files + args->nfiles != argv + i)
		return mb_bad_input("give the files together, after the options: '%s'", argv[i]);
	args->nfiles++;
	return 0;
}

/* One "--name[=value]" at argv[*i]; consumes the value's word if separate. */
static int parse_option(struct mb_args *args, int argc, char **argv, int *i)
{
	const char *word = argv[*i], *name = word + 2, *eq, *value = NULL;
	const struct option *o;
	size_t len;

	if (takes_files(args->command) && word[0] != '-')
		return add_file(args, argv, *i);
	if (!strcmp(word, "-h"))
		name = "help";
	else if (!strcmp(word, "-o") && args->command == MB_CMD_PLOT)
		name = "o";
	else if (strncmp(word, "--", 2) || !word[2])
		return mb_bad_input("unexpected argument '%s' (options start with --; see "
				    "muonbench %s --help)",
				    word, commands[args->command].name);
	eq = strchr(name, '=');
	len = eq ? (size_t)(eq - name) : strlen(name);
	o = find(name, len);
	if (!o)
		return mb_bad_input("unknown option '%s' (see muonbench %s --help)", word,
				    commands[args->command].name);
	if (!(o->commands & ON(args->command)))
		return mb_bad_input("option '%s%s' does not apply to 'muonbench %s'", dashes(o),
				    o->name, commands[args->command].name);
	if (o->kind == FLAG && eq)
		return mb_bad_input("option '%s%s' takes no value", dashes(o), o->name);
	if (o->kind != FLAG) {
		if (eq)
			value = eq + 1;
		else if (*i + 1 < argc)
			value = argv[++*i];
		else
			return mb_bad_input("option '%s%s' needs a value (%s)", dashes(o), o->name,
					    o->arg);
	}
	/* the last counts, as in most tools (a script's defaults, then what it changes): said */
	if (is_given(args, (size_t)(o - options)))
		fprintf(stderr, "muonbench: %s%s given again: the last, '%s', counts\n", dashes(o),
			o->name, o->kind == FLAG ? "on" : value);
	set_given(args, (size_t)(o - options));
	return set_option(args, o, value);
}

/* A copy of VALUE that lives as long as ARGS, for the TEXT and CHOICE fields. */
static const char *keep(struct mb_args *args, const char *value)
{
	size_t n = strlen(value) + 1;
	char *at = args->ds_values + args->ds_values_used;

	if (n > sizeof(args->ds_values) - args->ds_values_used)
		return NULL;
	memcpy(at, value, n);
	args->ds_values_used += n;
	return at;
}

/* What becomes of a setting of the DeepSpeed config. */
enum ds_use {
	DS_SET,	      /* the option is set from the file ("auto": left at its default) */
	DS_GIVEN,     /* the command line gave the option: it wins */
	DS_NOT_TAKEN, /* the command does not take the option */
};

/*
 * The setting S of the DeepSpeed config DS: checked as the command line's
 * value would be, and set unless the command line gave its option or the
 * command does not take it (*use says which).
 */
static int ds_apply(struct mb_args *args, const struct mb_dsconfig *ds,
		    const struct mb_dsconfig_setting *s, enum ds_use *use)
{
	const struct option *o = s->option ? find(s->option, strlen(s->option)) : NULL;
	const char *value = s->value;
	struct mb_args scratch;
	char what[512];

	*use = DS_SET;
	if (!s->option)
		return 0;
	if (!o)
		return mb_fail("--ds-config: %s names no option '--%s'", s->key, s->option);
	if (is_given(args, (size_t)(o - options)))
		*use = DS_GIVEN;
	else if (!(o->commands & ON(args->command)))
		*use = DS_NOT_TAKEN;
	if (s->is_auto)
		return 0;
	snprintf(what, sizeof(what), "%s:%zu:%zu: %s (--%s)", ds->source, s->line, s->col, s->key,
		 o->name);
	if (*use != DS_SET) {
		scratch = *args;
		return set_value(&scratch, o, value, what);
	}
	/* the value outlives the file: the text options and the lists (their text) point to it */
	if (o->kind != FLAG && o->kind != ENUM && o->kind != COUNT && o->kind != SIZE &&
	    o->kind != REAL && !(value = keep(args, s->value)))
		return mb_fail("%s: no room for the value '%s'", what, s->value);
	return set_value(args, o, value, what);
}

/* Whether S (in USE) is listed among the keys not used, or else among the "auto" ones. */
static bool ds_listed(const struct mb_dsconfig_setting *s, enum ds_use use, bool is_auto)
{
	return is_auto ? s->is_auto && use == DS_SET : use == DS_NOT_TAKEN;
}

/*
 * One line on stderr, "muonbench: FILE: WHAT: KEYS": KEYS the list FIRST
 * ("" or "a, b") and the keys of the settings listed as IS_AUTO says, with
 * the defaults they take if so.
 */
static void ds_say_keys(const struct mb_dsconfig *ds, const enum ds_use *use, const char *what,
			const char *first, bool is_auto)
{
	const struct mb_dsconfig_setting *s;
	const char *sep = *first ? ", " : "";
	const struct option *o;
	size_t i;

	fprintf(stderr, "muonbench: %s: %s: %s", ds->source, what, first);
	for (i = 0; i < ds->nsettings; i++) {
		s = &ds->settings[i];
		if (!ds_listed(s, use[i], is_auto))
			continue;
		fprintf(stderr, "%s%s", sep, s->key);
		sep = ", ";
		o = s->option ? find(s->option, strlen(s->option)) : NULL;
		if (is_auto && o)
			fprintf(stderr, " (--%s %s)", o->name, o->def ? o->def : "unset");
		else if (is_auto)
			fprintf(stderr, " (%s)", s->value);
	}
	fputc('\n', stderr);
}

/* On stderr: what DS gave that is not used, what takes muonbench's default, what a value means. */
static void ds_tell(const struct mb_args *args, const struct mb_dsconfig *ds,
		    const enum ds_use *use)
{
	size_t i, nauto = 0, ntaken = 0;
	char what[64];

	for (i = 0; i < ds->nsettings; i++) {
		nauto += ds_listed(&ds->settings[i], use[i], true);
		ntaken += ds_listed(&ds->settings[i], use[i], false);
	}
	snprintf(what, sizeof(what), "not used%s%s", args->command == MB_CMD_RUN ? "" : " by ",
		 args->command == MB_CMD_RUN ? "" : commands[args->command].name);
	if (ds->nunused || ntaken)
		ds_say_keys(ds, use, what, ds->unused, false);
	if (nauto)
		ds_say_keys(ds, use, "\"auto\" takes muonbench's default", "", true);
	for (i = 0; i < ds->nsettings; i++)
		if (ds->settings[i].note && !ds->settings[i].is_auto && use[i] == DS_SET)
			fprintf(stderr, "muonbench: %s:%zu:%zu: %s\n", ds->source,
				ds->settings[i].line, ds->settings[i].col, ds->settings[i].note);
}

/* --ds-config FILE: the options it names, after the command line's. */
static int apply_ds_config(struct mb_args *args)
{
	enum ds_use use[MB_DSCONFIG_MAX];
	struct mb_dsconfig ds;
	size_t i;
	int err;

	err = mb_dsconfig_load_file(&ds, args->ds_config);
	for (i = 0; !err && i < ds.nsettings; i++)
		err = ds_apply(args, &ds, &ds.settings[i], &use[i]);
	if (!err)
		ds_tell(args, &ds, use);
	mb_dsconfig_release(&ds);
	return err;
}

/* --stage's list "1,2,3" into args->stage_list: each of 1, 2, 3 at most once. */
static int parse_stages(struct mb_args *args)
{
	const char *p = args->stages;
	size_t i;

	for (;;) {
		if (p[0] < '1' || p[0] > '3' || (p[1] && p[1] != ','))
			return mb_bad_input("--stage: invalid stage list '%s' (expected 1, 2 or 3, "
					    "or a list such as 2,3)",
					    args->stages);
		for (i = 0; i < args->nstages; i++)
			if (args->stage_list[i] == (unsigned)(p[0] - '0'))
				return mb_bad_input("--stage: stage %c twice in '%s'", p[0],
						    args->stages);
		args->stage_list[args->nstages++] = (unsigned)(p[0] - '0');
		if (!p[1])
			return 0;
		p += 2;
	}
}

/*
 * --variant's list "pin,both" (names of mb_variant's table, or all) into
 * args->variant_list, in the table's order (master first in each stage, as
 * the base of the changes); a variant named twice, or with all, is refused
 * as every list's value given twice is.
 */
static int parse_variants(struct mb_args *args)
{
	const char *p = args->variants;
	unsigned chosen = 0, these, v;
	size_t len;
	int found;

	do {
		len = strcspn(p, ",");
		found = mb_variant_find(p, len);
		these = len == 3 && !strncmp(p, "all", 3) ? (1u << MB_NVARIANTS) - 1
			: found >= 0			  ? 1u << found
							  : 0;
		if (these & chosen)
			return mb_bad_input(
				"--variant: '%.*s' twice in '%s'%s (a list takes each "
				"value once)",
				(int)len, p, args->variants,
				strstr(args->variants, "all") ? ", all has every variant" : "");
		chosen |= these;
		if (!these)
			return mb_bad_input(
				"--variant: invalid variant list '%s' (expected one of " MB_VARIANT_WORDS
				" or all, or a list of them)",
				args->variants);
		p += len;
	} while (*p++ == ',');
	for (v = 0; v < MB_NVARIANTS; v++)
		if (chosen & (1u << v))
			args->variant_list[args->nvariants++] = (enum mb_variant)v;
	return 0;
}

/* Whether CHOICE option value V is WORD (a command that does not take it: NULL, false). */
static bool is(const char *v, const char *word)
{
	return v && !strcmp(v, word);
}

/*
 * Whether stage STAGE reads LIST, &args->gather_budgets or
 * &args->sub_group_sizes (mb_grid's rule): a stage that does not read a
 * swept list makes one cell of it, at its first value.
 */
static bool stage_reads(const struct mb_args *args, unsigned stage, const struct mb_u64_list *list)
{
	if (list == &args->sub_group_sizes)
		return mb_grid_reads_sub_group_size(stage);
	return mb_grid_reads_gather_budget(stage, args->zero3_apply);
}

/*
 * Said once, on stderr: each swept list (--gather-budget, --sub-group-size)
 * that a stage asked does not read, and the one value its cells take.
 */
static void say_unread(const struct mb_args *args)
{
	const struct mb_u64_list *lists[] = { &args->gather_budgets, &args->sub_group_sizes };
	const char *names[] = { "gather-budget", "sub-group-size" };
	const char *why[] = { " under --zero3-apply subgroup (a sub-group is gathered whole)",
			      " (only ZeRO-3 has sub-groups)" };
	char stages[32];
	size_t i, k, n;

	for (i = 0; i < 2; i++) {
		if (lists[i]->n < 2)
			continue;
		stages[0] = '\0';
		for (k = n = 0; k < args->nstages; k++)
			if (!stage_reads(args, args->stage_list[k], lists[i]))
				snprintf(stages + strlen(stages), sizeof(stages) - strlen(stages),
					 "%s%u", n++ ? " and " : "", args->stage_list[k]);
		if (n)
			fprintf(stderr,
				"muonbench: --%s %s: stage%s %s do%s not read it%s: %s cells are made once, "
				"at the first value, %.*s\n",
				names[i], lists[i]->text, n > 1 ? "s" : "", stages,
				n > 1 ? "" : "es", why[i], n > 1 ? "their" : "its",
				(int)strcspn(lists[i]->text, ","), lists[i]->text);
	}
}

/* The values the commands read (struct mb_args' last part), from the strings parsed. */
static int resolve(struct mb_args *args)
{
	int err;

	args->pin_memory_on = is(args->pin_memory, "on");
	args->fwd_bwd_on = is(args->fwd_bwd, "on");
	args->fit_check_on = is(args->fit_check, "on");
	args->interleave_on = is(args->interleave, "on");
	args->numa_auto = is(args->numa, "auto");
	args->gather_budget = args->gather_budgets.v[0];
	args->sub_group_size = args->sub_group_sizes.v[0];
	args->nstages = args->nvariants = 0;
	if (args->help || args->version)
		return 0;
	if (args->stages && (err = parse_stages(args)))
		return err;
	if (args->stages)
		say_unread(args);
	return args->variants ? parse_variants(args) : 0;
}

int mb_args_parse(struct mb_args *args, int argc, char **argv)
{
	int i, err;

	memset(args, 0, sizeof(*args));
	if ((err = parse_command(args, argc, argv, &i)) || (err = set_defaults(args)))
		return err;
	for (; i < argc; i++)
		if ((err = parse_option(args, argc, argv, &i)))
			return err;
	if (mb_args_given(args, "model") && mb_args_given(args, "config"))
		return mb_bad_input("--model and --config both name a model: give one");
	if (mb_args_given(args, "config"))
		args->model = NULL;
	if (args->ds_config && !args->help && !args->version && (err = apply_ds_config(args)))
		return err;
	return resolve(args);
}

/* Option O's value in ARGS as text into BUF: words, numbers, lists as they stand. */
static void value_text(const struct mb_args *args, const struct option *o, char *buf, size_t len)
{
	const void *field = (const char *)args + o->offset;
	const struct mb_u64_list *list = field;
	const char *c, *text;
	unsigned i, k;
	size_t n;

	buf[0] = '\0';
	switch (o->kind) {
	case FLAG:
		snprintf(buf, len, "%s", *(const bool *)field ? "on" : "off");
		return;
	case ENUM:
		k = *(const unsigned *)field;
		for (c = o->choices, i = 0; c && i < k; i++)
			c = strchr(c, '|') ? strchr(c, '|') + 1 : NULL;
		snprintf(buf, len, "%.*s", c ? (int)strcspn(c, "|") : 0, c ? c : "");
		return;
	case COUNT:
	case SIZE:
		snprintf(buf, len, "%llu", (unsigned long long)*(const uint64_t *)field);
		return;
	case REAL:
		snprintf(buf, len, "%.17g", *(const double *)field);
		return;
	case SIZES:
	case COUNTS:
		for (i = 0, n = 0; i < list->n && n < len; i++)
			n += (size_t)snprintf(buf + n, len - n, "%s%llu", i ? "," : "",
					      (unsigned long long)list->v[i]);
		return;
	default: /* the texts, lists of them too */
		text = *(const char *const *)field;
		snprintf(buf, len, "%s", text ? text : "(none)");
		return;
	}
}

/*
 * Run's options of which each rank may have its own value under MPI: its
 * device and binding, its output and what it prints, its rank, its device's
 * profile and tuning. Run's other options shape the grid and the step: the
 * ranks agree on them (mb_args_run_option).
 */
static const char *const rank_own[] = {
	"ds-config",
	"pinned-alloc",
	"pinned-device-copy",
	"quiet",
	"cpus",
	"membind",
	"numa",
	"out",
	"rank",
	"format",
	"tuning",
	"platform",
	"device",
	"device-mem-limit",
	"profile",
	"help",
	"version",
};

static bool is_rank_own(const struct option *o)
{
	size_t i;

	for (i = 0; i < sizeof(rank_own) / sizeof(rank_own[0]); i++)
		if (!strcmp(o->name, rank_own[i]))
			return true;
	return false;
}

const char *mb_args_run_option(const struct mb_args *args, size_t i, char *buf, size_t len)
{
	size_t k;

	for (k = 0; k < NOPTIONS; k++) {
		if (!(options[k].commands & ON(MB_CMD_RUN)))
			continue;
		if (!i--) {
			if (is_rank_own(&options[k]))
				buf[0] = '\0';
			else
				value_text(args, &options[k], buf, len);
			return options[k].name;
		}
	}
	return NULL;
}

bool mb_args_given(const struct mb_args *args, const char *name)
{
	const struct option *o = find(name, strlen(name));

	return o && is_given(args, (size_t)(o - options));
}

/*
 * Print TEXT from column COL, wrapped at 79 columns, continuation lines
 * indented to INDENT.
 */
static void print_wrapped(FILE *out, size_t col, size_t indent, const char *text)
{
	const char *word = text, *end;
	size_t len;

	while (*word) {
		end = word + strcspn(word, " ");
		len = (size_t)(end - word);
		if (col > indent && col + 1 + len > 79) {
			fprintf(out, "\n%*s", (int)indent, "");
			col = indent;
		} else if (word != text) {
			fputc(' ', out);
			col++;
		}
		fprintf(out, "%.*s", (int)len, word);
		col += len;
		word = end + strspn(end, " ");
	}
	fputc('\n', out);
}

static void print_options(FILE *out, enum mb_command command)
{
	char left[48], text[512];
	size_t i, n;

	for (i = 0; i < NOPTIONS; i++) {
		const struct option *o = &options[i];

		if (!(o->commands & ON(command)))
			continue;
		snprintf(left, sizeof(left), "%s%s%s%s", o->name[1] ? "--" : "-", o->name,
			 o->arg ? " " : "", o->arg ? o->arg : "");
		n = (size_t)snprintf(text, sizeof(text), "%s", o->help);
		if ((o->kind == CHOICE || o->kind == ENUM || o->kind == WORDS) &&
		    strcmp(o->arg, o->choices) && n < sizeof(text))
			n += (size_t)snprintf(text + n, sizeof(text) - n, ": %s", o->choices);
		if (o->def && n < sizeof(text))
			snprintf(text + n, sizeof(text) - n, " (default: %s)", o->def);
		/* a name too long for its column: the text under it, not run into it */
		if (strlen(left) > 21)
			fprintf(out, "  %s\n%*s", left, 24, "");
		else
			fprintf(out, "  %-21s ", left);
		print_wrapped(out, 24, 24, text);
	}
}

void mb_print_help(FILE *out, enum mb_command command)
{
	const struct command *c = &commands[command];
	char models[512];
	int i;

	if (command == MB_CMD_RUN) {
		fprintf(out, "usage: muonbench [COMMAND] [options]\n\ncommands:\n");
		for (i = 0; i < MB_NCOMMANDS; i++)
			fprintf(out, "  %-10s %s\n", commands[i].name, commands[i].summary);
		fprintf(out, "\n'muonbench COMMAND --help' shows a command's options.\n\n");
	}
	fprintf(out, "usage: muonbench %s [options]%s\n\n", c->name,
		command == MB_CMD_REPORT    ? " FILE.csv..."
		: command == MB_CMD_COMPARE ? " BASE.csv NEW.csv"
		: command == MB_CMD_PLOT    ? " FILE.csv... -o IMAGE.svg"
					    : "");
	print_wrapped(out, 0, 0, c->description);
	fprintf(out, "\noptions:\n");
	print_options(out, command);
	if (!(MODEL_CMDS & ON(command)))
		return;
	fprintf(out, "\nmodels: %s\n\n", mb_config_builtin_names(models, sizeof(models)));
	print_wrapped(out, 0, 0,
		      "Sizes take K, M, G, T (powers of 1000) or Ki, Mi, Gi, Ti (powers of 1024) "
		      "and an optional B; counts and sizes may be written 1e9.");
	print_wrapped(out, 0, 0,
		      "A list takes each value once (2Mi and 2097152 are one value). A stage that "
		      "does not read a swept list (--sub-group-size at stage 1 or 2, "
		      "--gather-budget at stage 3 under --zero3-apply subgroup) makes its cells "
		      "once, at the list's first value, and says so.");
}

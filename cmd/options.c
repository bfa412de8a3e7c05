/*
 * options: the option table (every option's name, kind, default, range,
 * help and the commands that take it) and the commands' names and texts.
 */
#include "option_table.h"

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

const struct option mb_options[] = {
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
/*
 * mb_knob's table: each knob an option, a knob of the plan's among the
 * plan's options for every command that builds a plan (MB_KNOBS_PLAN here,
 * the older ones after it), a knob of the step's among the step's for the
 * commands that run or model one (MB_KNOBS_STEP, after --pinned-device-copy)
 */
/* clang-format off */
#define KNOB_OPTION_(cmds, id, field, option, words, autow, dflt, since, help)                  \
	{ option, words MB_KNOB_AUTO_WORD(autow), CHOICE, AT(knob[MB_KNOB_##id]), dflt, 0, 0, \
	  words MB_KNOB_AUTO_WORD(autow), cmds, help },
#define PLAN_OPTION_(...) KNOB_OPTION_(MODEL_CMDS, __VA_ARGS__)
#define STEP_OPTION_(...) KNOB_OPTION_(STEP_CMDS, __VA_ARGS__)
#define NS_OPTION_(...)	  KNOB_OPTION_(MODEL_CMDS | ON(MB_CMD_NS), __VA_ARGS__)
	MB_KNOBS_PLAN(PLAN_OPTION_)
	MB_KNOB_ROW_MOMENTUM_DTYPE(PLAN_OPTION_)
	MB_KNOB_ROW_PARAMS_BACK(PLAN_OPTION_)
	MB_KNOB_ROW_ZERO3_APPLY(PLAN_OPTION_)
	/* clang-format on */
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
	/* clang-format off */
	MB_KNOB_ROW_PIN_MEMORY(STEP_OPTION_)
	/* clang-format on */
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
	/* clang-format off */
	MB_KNOBS_STEP(STEP_OPTION_)
	MB_KNOB_ROW_FWD_BWD(PLAN_OPTION_)
	/* clang-format on */
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
	{ "timeline", "FILE", TEXT, AT(timeline), NULL, 0, 0, NULL,
	  ON(MB_CMD_RUN) | ON(MB_CMD_PREDICT),
	  "write each step's device spans to FILE (truncated) as CSV rows (engine, cell, run, "
	  "step, phase, start and end from the step's first span): run: every step of every "
	  "run, and the model's step of each cell it predicts (run 0), to set them side by "
	  "side; predict: the predictions" },
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
	/* clang-format off */
	MB_KNOB_ROW_NS_METHOD(NS_OPTION_)
	/* clang-format on */
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
	  "1e-4 relative Frobenius error in fp32, 1e-2 in fp16, 5e-2 in bf16 (about twice "
	  "the error that 16-bit Newton-Schulz was measured to have)" },
	{ "peer", "FILE", TEXT, AT(peer), NULL, 0, 0, NULL, ON(MB_CMD_NS),
	  "a framework's Newton-Schulz times (the PyTorch peer's output, scripts/gpu-ns.sh: "
	  "lines ns,RxC,METHOD,DTYPE,MEDIAN_S,...): its rate beside ours per shape, method and "
	  "precision, and ours over it" },
	{ "tuning", "off|auto|FILE", TEXT, AT(tuning), "auto", 0, 0, NULL,
	  DEVICE_CMDS | ON(MB_CMD_ADVISE),
	  "CLBlast's kernel parameters: auto applies the tuning made for this device (from "
	  "muonbench tune, else shipped), else one of the same platform, driver and "
	  "architecture, else one of the same platform and device type once it passes ns "
	  "--verify here (checked once, in a child), else CLBlast's defaults; off keeps "
	  "CLBlast's own; or a tuning file made for this device" },
	{ "ns", NULL, FLAG, AT(tune_ns), NULL, 0, 0, NULL, ON(MB_CMD_TUNE),
	  "tune our 16-bit GEMM kernel (kernels/ns_gemm.cl, the bf16 and fp16 Newton-Schulz's) "
	  "instead of CLBlast's: its tiles swept on the GEMMs Newton-Schulz issues for the "
	  "model (or --shape) at fp16, each checked against the portable kernel and a float64 "
	  "product, the fastest for each size of GEMM stored in the device's tuning (ns_gemm), "
	  "beside CLBlast's parameters; needs no clblast-utils" },
	{ "time-budget", "DURATION", TEXT, AT(time_budget), "10m", 0, 0, NULL, ON(MB_CMD_TUNE),
	  "the longest the tuners may take, all together (the checks of what they found come "
	  "after; --ns: the sweep, the default tile always tried): 90s, 10m, 1h" },
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
	  "measure only when the file is not there yet, or is of an older format or of "
	  "another Newton-Schulz precision (the cache's also: damaged, or without a key "
	  "this muonbench measures) (make run uses it)" },
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
#undef PLAN_OPTION_
#undef STEP_OPTION_
#undef NS_OPTION_
#undef KNOB_OPTION_

#define NOPTIONS (sizeof(mb_options) / sizeof(mb_options[0]))
_Static_assert(NOPTIONS <= MB_OPTIONS_MAX, "struct mb_args' given has a bit per option");
/* an ENUM option's field is written as an unsigned */
_Static_assert(sizeof(enum mb_format) == sizeof(unsigned) &&
		       sizeof(enum mb_pinned_alloc) == sizeof(unsigned) &&
		       sizeof(enum mb_estimate) == sizeof(unsigned),
	       "the ENUM options' enums are the size of an unsigned");

const size_t mb_noptions = NOPTIONS;

const struct command mb_commands[MB_NCOMMANDS] = {
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
	[MB_CMD_TUNE] = { "tune",
			  "tune CLBlast's GEMM kernels for the device, with its own tuners (--ns: "
			  "our 16-bit Newton-Schulz kernel's tiles)",
			  "Runs CLBlast's tuners (clblast-utils) for the device: the indirect "
			  "GEMM kernel at the largest GEMM that Newton-Schulz issues for the model "
			  "(or --shape), the direct GEMM kernel at the smallest, the copy, pad and "
			  "transpose kernels the indirect GEMM uses, and the routine tuner that "
			  "picks direct against indirect GEMM; each gets a share of "
			  "--time-budget and searches more of its space while time is left. Each "
			  "kernel's best parameters are checked with muonbench ns --verify (a "
			  "float64 host reference) and dropped if they fail to compile or give "
			  "wrong results; the rest are stored in the cache under the device's "
			  "key, where --tuning auto finds them. With --ns, our own 16-bit GEMM "
			  "kernel (kernels/ns_gemm.cl) instead: its tiles on the device's path "
			  "swept over the GEMMs Newton-Schulz issues, by the size of C, each "
			  "checked against the portable kernel and a float64 product before it "
			  "is timed; the fastest per size, stored in the same file (ns_gemm)." },
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
			     "with the benchmark's own instruments: memcpy and a 4 KiB copy's "
			     "latency; whether a pageable copy's enqueue holds the host for its "
			     "length; then, in "
			     "4 x --reps interleaved rounds (the larger shapes in fewer, 4 at least; "
			     "all of them held to about 10 s x --reps whatever the shapes, a slow "
			     "shape timed in fewer, as the output says with the time taken), each "
			     "charged at its work over its median sample's time (a shared "
			     "machine's slow spells, while they take less than half the rounds, "
			     "do not move it): Newton-Schulz by each "
			     "method on each --shape, a point of its ladder (default " MB_PROFILE_DEFAULT_SHAPES
			     "), copies each way and both at once, pinned and pageable (by "
			     "the device's events, or by the host clock, which a caller waits, "
			     "for a pageable copy that holds it), "
			     "of 64 MiB and of 1 MiB around 64 MiB (out of cache, but every other "
			     "one's source written 4 MiB of copies before, as about half a "
			     "step's are), "
			     "the forward/backward's rate "
			     "from the last one's GEMMs alone and the synthetic forward and "
			     "backward themselves at 128, 256 and 512 tokens, the momentum kernels "
			     "(fp32 and bf16), the bf16 cast "
			     "and the norm's sums (with the kernel the step runs on the device) by "
			     "their events, the gradient fill and the host optimizer's and "
			     "streaming passes by the host clock, the kernels and passes both out "
			     "of cache and warm on a small batch's size; after them, what part of "
			     "a pageable copy's time a kernel beside it on the other queue cannot "
			     "hide; a wait with the device busy behind it (what the host loses "
			     "then); what the host's enqueue of a Newton-Schulz holds it, and "
			     "costs a kernel running beside it; what the host's pass costs beyond "
			     "its loops (its threads' wake-ups). Prints it as JSON and "
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
	return mb_commands[c].name;
}

/*
 * mb_profile: what a device and its host can do, as the model of the step
 * (mb_predict) needs it: copy rates, compute rates, host rates. A small
 * versioned JSON file (profiles/reference.json is one, docs/predict.md
 * documents the keys); read here, the cJSON tree deleted here.
 *
 * Every field is declared once in mb_profile.c (key, kind, what it means);
 * the same table reads, checks, sets and writes them, so a profile that is
 * written reads back the same, bit for bit.
 *
 * Rates are in 10^9 units a second, as muonbench bandwidth and ns print
 * them: GB/s of bytes moved (an H2D and a D2H at once count the bytes of
 * both), GFLOP/s counted as mb_ns_flops counts.
 */
#ifndef MB_PROFILE_H
#define MB_PROFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/*
 * Version 2 adds norm_gbs, and measures Newton-Schulz with its norm in the
 * device's order (contiguous runs on a CPU device). Version 3 holds
 * Newton-Schulz's rate at a ladder of matrix sizes (struct mb_profile_ladder)
 * where version 2 held one rate. Version 4 has the same keys, but its rates
 * are timed in interleaved rounds (a mean over them at first, the median
 * sample's since issue 45: a shared VM's slow spells moved the mean) where
 * version 3's were medians of runs in a row. A file of an older version is
 * refused, MB_KIND_OLD_FORMAT, with a message that says to measure it again.
 */
#define MB_PROFILE_FORMAT_VERSION 4

/*
 * The elements of the profile's elementwise and host figures (its large
 * ones), and of their small ones (the *_small_gbs rates: a small model's
 * batch, which the caches hold). Between the two a rate is interpolated
 * (mb_profile_sized_rate).
 */
#define MB_PROFILE_LARGE_ELEMS (16ull << 20)
#define MB_PROFILE_SMALL_ELEMS (1ull << 18)

/*
 * The bytes of the copies the profile's copy figures are of (its large
 * ones, the whole 64 MiB buffers) and of its small ones (the *_small_gbs
 * copy rates: 2^18 fp32 elements, a small model's matrix), between which a
 * copy's rate is interpolated by its bytes (mb_profile_sized_rate).
 */
#define MB_PROFILE_COPY_LARGE_BYTES (64ull << 20)
#define MB_PROFILE_COPY_SMALL_BYTES (4 * MB_PROFILE_SMALL_ELEMS)

/* The most points of a ladder. */
#define MB_PROFILE_LADDER_MAX 8

/*
 * A figure at a few sizes of the work: a rate, point i doing flops[i] FLOPs
 * a matrix at value[i] GFLOP/s (a file writes {"flops": F, "gflops": G}
 * objects), or a time, value[i] microseconds for a matrix of flops[i] FLOPs
 * ({"flops": F, "us": T}); flops strictly increasing, every value positive
 * and finite, 1 to MB_PROFILE_LADDER_MAX points.
 */
struct mb_profile_ladder {
	size_t n;
	double flops[MB_PROFILE_LADDER_MAX], value[MB_PROFILE_LADDER_MAX];
};

struct mb_profile {
	char name[64];	  /* "reference", or the device's cache key */
	char device[256]; /* what it describes, for people */

	/* host <-> device copies, one direction at a time */
	double h2d_pinned_gbs, d2h_pinned_gbs;
	double h2d_pageable_gbs, d2h_pageable_gbs;
	/* an H2D and a D2H at once, the bytes of both a second */
	double both_pinned_gbs, both_pageable_gbs;
	/*
	 * The six copy rates above for copies of MB_PROFILE_COPY_SMALL_BYTES
	 * (those above are of MB_PROFILE_COPY_LARGE_BYTES), each copy's target
	 * last touched long before and every other one's source written
	 * shortly before, as about half of a step's is (mb_bw_measure_spread):
	 * on a CPU device a copy is a memcpy, which a source in the cache
	 * makes 1.3-1.7x faster than the 64 MiB one.
	 * (Before issue 45's last change these were timed with the source
	 * cold too, at about the 64 MiB rate: such a file predicts a small
	 * model's copies that much longer.) 0, where a file leaves them out:
	 * the large rate at every size.
	 */
	double h2d_pinned_small_gbs, d2h_pinned_small_gbs;
	double h2d_pageable_small_gbs, d2h_pageable_small_gbs;
	double both_pinned_small_gbs, both_pageable_small_gbs;
	/* a pageable copy returns to the host only once it is done (the driver stages it) */
	bool pageable_holds_host;
	/*
	 * Of a pageable copy's time, the part a kernel on another queue cannot
	 * hide: such a kernel runs at 1 - this while the copy runs beside it.
	 * 0 (the copy hides fully behind it) where a file leaves it out.
	 */
	double pageable_exposed_frac;

	/* Newton-Schulz, by method, by the FLOPs of a matrix (mb_profile_ladder_at) */
	struct mb_profile_ladder ns_gram_gflops, ns_standard_gflops;
	/*
	 * The precision of each ladder's GEMMs: "fp32", "bf16" or "fp16"
	 * (mb_precision_names). Keys a file may leave out (a profile of
	 * format 4 from before them), read as "fp32", the only one then.
	 */
	char ns_gram_precision[8], ns_standard_precision[8];
	double momentum_gbs; /* the momentum kernel, bytes read and written */
	/*
	 * the bf16-momentum kernel (ZeRO-3's), likewise: it widens and rounds
	 * each element besides. 0, where a file leaves it out: momentum_gbs.
	 */
	double momentum_bf16_gbs;
	/*
	 * each of the two at MB_PROFILE_SMALL_ELEMS elements (the others at
	 * MB_PROFILE_LARGE_ELEMS); 0, where a file leaves it out: the large
	 * one's rate at every size
	 */
	double momentum_small_gbs, momentum_bf16_small_gbs;
	double norm_gbs;       /* the norm's partial sums (mb_ns_sumsq_bf16), bytes read */
	double fill_gbs;       /* the backward stand-in's gradient fill (a PRNG), bytes written */
	double cast_gbs;       /* the fp32 <-> bf16 casts (rounding, widening), bytes moved */
	double fwd_bwd_gflops; /* the synthetic forward/backward's GEMMs */
	/*
	 * The synthetic forward and backward themselves, as mb_fwdbwd_run issues
	 * them (their transposes, fills and checkpoint copies, by the host
	 * clock): a pass's FLOPs over its time, by the pass's tokens (each
	 * GEMM's one small side: what decides a GEMM's rate on a CPU device
	 * more than its weight's size), a ladder whose flops[] hold the tokens
	 * (mb_profile_ladder_at reads it alike; a file writes {"tokens": T,
	 * "gflops": G} points). No point, where a file leaves them out:
	 * fwd_bwd_gflops times both.
	 */
	struct mb_profile_ladder forward_gflops, backward_gflops;

	double host_opt_gbs; /* the host optimizer's bytes read and written (mb_hostopt_bytes) */
	double memcpy_gbs;   /* the host's memcpy, one thread */
	/*
	 * The host's streaming passes as the step runs them, on every thread:
	 * the unscale-and-clip over the grads, the ZeRO-3 cast; bytes read and
	 * written. 0, where a file leaves it out: memcpy_gbs times them.
	 */
	double host_stream_gbs;
	/* host_opt_gbs and host_stream_gbs at MB_PROFILE_SMALL_ELEMS; 0: as the large */
	double host_opt_small_gbs, host_stream_small_gbs;

	/* a device command's own time beyond its work, as its events see it; 0: none */
	double command_overhead_us;
	/* what the host loses waiting on a command beyond the command's own time (the
	 * launch and the wake-up, as the host clock sees them); 0: none, as a file
	 * without it says */
	double command_latency_us;
	/*
	 * The same where the device goes on with a kernel after the command
	 * (its next commands already queued): on a CPU device the host thread
	 * shares the cores with the device's workers, and wakes late at times
	 * (a copy, one worker's memcpy on PoCL, leaves it a core). 0, where a
	 * file leaves it out: command_latency_us.
	 */
	double command_latency_busy_us;
	/*
	 * What the host's enqueue of one Newton-Schulz (its GEMMs and kernels)
	 * holds the host thread, us, and the part of its rate a kernel running
	 * beside that enqueue loses, 0 to 1: on a CPU device the host thread's
	 * enqueue work takes a core from the device's workers (PoCL on 2 cores:
	 * 110-165 us for the ladder's first shape by the gram method, and 0.20
	 * to 0.35); a GPU's kernels run beside it untouched. The model holds
	 * the host for the ladders below where the profile has them, this
	 * figure where it has not, and slows the kernels beside a hold for this
	 * figure of it at most (the span the fraction was measured over). 0,
	 * where a file leaves them out: the host enqueues at once, and nothing
	 * is slowed.
	 */
	double ns_enqueue_us;
	double enqueue_contention_frac;
	/*
	 * The same hold by method, by the FLOPs of a matrix (a ladder of
	 * times): the enqueue of one Newton-Schulz right after the host waited
	 * for the device, as most of a step's are. On PoCL here with CLBlast's
	 * tuned parameters it goes with the shape, not only its FLOPs' work:
	 * about 190 us at 128x256, 400-520 from 256x256 up (each GEMM more
	 * kernels to enqueue), where ns_enqueue_us, on 128x256, gives one
	 * figure to all. No point (a file from before them): ns_enqueue_us.
	 */
	struct mb_profile_ladder ns_gram_enqueue_us, ns_standard_enqueue_us;
	/*
	 * What the host's pass (the host optimizer and its streaming pass, one
	 * parallel region) costs beyond its loops, us: its threads' wake-ups, at
	 * its start and its barriers, which host_opt_gbs and host_stream_gbs
	 * (each thread's own loops, the slowest's) leave out. 0, where a file
	 * leaves it out: an older muonbench's rates, whose samples held a
	 * wake-up each.
	 */
	double host_pass_us;

	/*
	 * The link between the ranks' GPUs that their collectives take (NVLink,
	 * or PCIe through a switch), GB/s a GPU sends (and receives) at once;
	 * 0, where a file leaves it out: collectives not modelled. Nothing
	 * here measures it (profile has one GPU): it is given. With
	 * peer_shares_pcie, the link is the one host copies take too, and a
	 * collective and a host copy at once share it.
	 */
	double peer_gbs;
	bool peer_shares_pcie;

	/*
	 * True: each rate is its figure's median sample over the interleaved
	 * rounds, which a shared machine's slow spells do not move; false, where
	 * a file leaves it out: the mean over them (a muonbench's from before),
	 * which went with how many spells the profile met. The model does not
	 * read it: profile --if-missing measures the cache's again without it.
	 */
	bool median_rates;

	/*
	 * Read, not a key: the first key this muonbench measures that the file
	 * left out (an older muonbench's profile of the same format, or one
	 * made by hand), which the model then reads as its default; NULL where
	 * the file has every key.
	 */
	const char *lacks;
};

/*
 * L's figure at FLOPS a matrix: interpolated log-log between the two
 * points around it (a power law between them), the first point's below
 * the first, the last's above the last. L must hold a point.
 */
double mb_profile_ladder_at(const struct mb_profile_ladder *l, double flops);

/*
 * The rate of work of size X, from LARGE's rate at X_LARGE and SMALL's at
 * X_SMALL: SMALL below X_SMALL, LARGE above X_LARGE, log-log between (a
 * power law); SMALL 0 (not measured): LARGE at every size.
 */
double mb_profile_sized_rate(double large, double small, double x, double x_small, double x_large);

/*
 * Set every point of L to GFLOPS, keeping its sizes; an empty L gets one
 * point (at 1 FLOP: one rate at every size).
 */
void mb_profile_ladder_set(struct mb_profile_ladder *l, double gflops);

/* The key of field I, in the file's order (for help and tests); NULL past the last. */
const char *mb_profile_key(size_t i);

/*
 * Parse LEN bytes of TEXT (SOURCE names it in errors) into *p. A missing
 * key, an unknown one, a value of the wrong type, a rate that is not
 * positive and finite, a ladder that is empty, too long or not in
 * increasing FLOPs, or a format_version other than
 * MB_PROFILE_FORMAT_VERSION is -MB_EINPUT, "SOURCE:LINE:COL: KEY: what"
 * where the value is in the text ("SOURCE: missing key" where it is not);
 * an older version's kind is MB_KIND_OLD_FORMAT (a caller may measure the
 * profile again), any other failure's MB_KIND_OTHER.
 */
int mb_profile_parse(struct mb_profile *p, const char *text, size_t len, const char *source);

/*
 * Load the profile NAME: a file path (one with a '/' or ending in .json),
 * else the shipped profiles/NAME.json. Errors as mb_profile_parse's; an
 * unknown name lists the shipped ones.
 */
int mb_profile_load(struct mb_profile *p, const char *name);

/*
 * Set the field KEY to VALUE, which is checked as the file's would be
 * ("on"/"off", "true"/"false" for a bool; one rate for a ladder sets every
 * point, mb_profile_ladder_set); WHAT names it in errors ("--h2d-gbs").
 * A rate that a finer optional key refines clears that key, so that what is
 * set times what it did before the key: fwd_bwd_gflops the passes'
 * ladders, memcpy_gbs host_stream_gbs (and its small one), momentum_gbs
 * momentum_bf16_gbs and the small ones, host_opt_gbs host_opt_small_gbs,
 * each copy rate its small one.
 * -MB_EINPUT for an unknown key or a bad value.
 */
int mb_profile_set(struct mb_profile *p, const char *key, const char *value, const char *what);

/*
 * The value of the numeric field KEY, or NaN for no such field (a bool
 * reads 0 or 1; a ladder its rate if every point has the same, else NaN).
 */
double mb_profile_get(const struct mb_profile *p, const char *key);

/* Write *p as JSON to OUT, every number exactly (%.17g): it parses back equal. */
void mb_profile_write(FILE *out, const struct mb_profile *p);

/*
 * Write *p to PATH (its directories must exist) through a temporary file
 * renamed into place, so that a reader never sees half a profile.
 * -MB_EFAIL naming the file.
 */
int mb_profile_save(const char *path, const struct mb_profile *p);

/*
 * The profile that each of RANKS ranks sees when they run at once on one
 * host, each with its own device, into *out, from P (what one rank measured
 * with the whole host to itself). The ranks run in lockstep, so that they
 * are in the same phase at the same time:
 *
 *   - each device keeps its own rates and its own link (one PCIe link a
 *     GPU): kernels, Newton-Schulz, the forward/backward are P's;
 *   - the host's cores and memory are split evenly: the host optimizer
 *     (host_opt_gbs) and the host's streaming passes (memcpy_gbs,
 *     host_stream_gbs) run at
 *     1/RANKS of P's rates;
 *   - every rank's copies cross the one host memory at once: its traffic,
 *     twice memcpy_gbs (a memcpy reads and writes each byte), is shared by
 *     the RANKS links. A pinned copy moves each byte through host memory
 *     once (the DMA), a pageable one three times (the driver's staging
 *     memcpy, then the DMA). Each copy rate (one way, and both ways at once)
 *     becomes the least of P's and 1/RANKS of what the host memory carries
 *     of that kind, taken as no less than P's own (one rank measured it).
 *
 * GPU-to-GPU collectives are not in the model: they do not cross the host
 * where the GPUs have NVLink (docs/mpi.md). RANKS 0 or 1: a copy of P.
 * The name and the device say "rank of RANKS" (predict prints them).
 */
void mb_profile_for_ranks(struct mb_profile *out, const struct mb_profile *p, unsigned ranks);

struct mb_cl_device_info;

/*
 * Where the cache keeps device D's profile, into BUF of LEN bytes
 * (mb_tuning_cache_file's directory, "profile-KEY.json"): what the profile
 * command writes and run reads.
 */
void mb_profile_cache_path(const struct mb_cl_device_info *d, char *buf, size_t len);

#endif

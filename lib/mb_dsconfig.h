/*
 * mb_dsconfig: a DeepSpeed config JSON, read as the muonbench options it
 * stands for.
 *
 * The keys that describe what muonbench replays become settings in the
 * command line's own terms: an option's name and the text its value would
 * have there ("sub-group-size", "1e9"), with where the file gives it, so
 * that the option parser checks ranges and units once, in one place, and
 * its errors can quote FILE:LINE:COL. Numbers keep the file's own digits.
 *
 *   zero_optimization.stage                         --stage (1, 2 or 3; 0 refused)
 *   zero_optimization.sub_group_size                --sub-group-size
 *   zero_optimization.reduce_bucket_size            --reduce-bucket-size
 *   zero_optimization.offload_optimizer.device      "cpu", else refused; left out
 *                                                   too, as DeepSpeed's default is "none"
 *   zero_optimization.offload_optimizer.pin_memory  --pin-memory on|off
 *   gradient_clipping                               --grad-clip
 *   bf16.enabled                                    false: --momentum-dtype fp32
 *   fp16.enabled                                    true refused
 *   train_micro_batch_size_per_gpu                  --micro-batch
 *
 * A key the file leaves out (or sets to null) sets nothing. "auto" (the
 * placeholder of DeepSpeed's Hugging Face integration) is a setting without
 * a value: muonbench's default. Keys muonbench does not read are collected,
 * not refused. A wrong JSON type, a stage, device or precision that
 * muonbench does not replay, or a key given twice is bad input. Nothing
 * here prints, and no cJSON object leaves the module.
 */
#ifndef MB_DSCONFIG_H
#define MB_DSCONFIG_H

#include <stdbool.h>
#include <stddef.h>

#define MB_DSCONFIG_MAX 16 /* settings: at most one per key read */

/*
 * One key of the file as an option. OPTION is the option's name without
 * "--" ("sub-group-size"), VALUE its text as the command line would give it
 * ("1e9", "on", "fp32"). An "auto" has no value (muonbench's default), or,
 * for bf16.enabled and fp16.enabled, which set no option (OPTION NULL), the
 * default's text ("true"). NOTE, when not NULL, says what applying the
 * setting means, to be said once (bf16.enabled false).
 */
struct mb_dsconfig_setting {
	const char *option;
	char key[64]; /* the file's key: "zero_optimization.sub_group_size" */
	bool is_auto;
	char value[64];
	const char *note;
	size_t line, col; /* where the value is in the file */
};

struct mb_dsconfig {
	char source[256]; /* the file, as errors name it */
	struct mb_dsconfig_setting settings[MB_DSCONFIG_MAX];
	size_t nsettings; /* in the file's order */
	char *unused;	  /* the keys not read, in the file's order ("a, b.c"), or "" */
	size_t nunused;
	/* zero_optimization.offload_optimizer.device is "cpu": the file offloads the optimizer
	 * (a file without the section leaves muonbench's default, which offloads it too) */
	bool offload_cpu;
};

/*
 * Read LEN bytes of TEXT (named SOURCE in errors) into *ds, which the caller
 * releases with mb_dsconfig_release, also on failure. Returns 0,
 * -MB_EINPUT with "SOURCE:LINE:COL: KEY ..." (or a JSON syntax error), or
 * -MB_EFAIL when out of memory.
 */
int mb_dsconfig_parse(struct mb_dsconfig *ds, const char *text, size_t len, const char *source);

/* mb_dsconfig_parse of the file PATH (at most 16 MiB). */
int mb_dsconfig_load_file(struct mb_dsconfig *ds, const char *path);

/* Free what *ds holds; it may then be parsed into again. */
void mb_dsconfig_release(struct mb_dsconfig *ds);

#endif

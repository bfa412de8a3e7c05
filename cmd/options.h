/*
 * options: the command line of muonbench, as one table.
 *
 * Every option is declared once in options.c with its type, default, range,
 * the subcommands that take it and its help; the same table parses argv,
 * applies the defaults (parsed like user input, so help and code agree) and
 * prints --help.
 */
#ifndef MB_OPTIONS_H
#define MB_OPTIONS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

enum mb_command {
	MB_CMD_RUN,
	MB_CMD_PLAN,
	MB_CMD_DEVICES,
	MB_CMD_NS,
	MB_CMD_BANDWIDTH,
	MB_CMD_TUNE,
	MB_CMD_REPORT,
	MB_CMD_COMPARE,
	MB_CMD_PLOT,
	MB_NCOMMANDS
};

/* The shapes ns times without --shape (the three-way table uses them). */
#define MB_NS_DEFAULT_SHAPES "256x768,1024x1024,1024x3072"

/* What the command line asked for, defaults filled in. */
struct mb_args {
	enum mb_command command;
	bool help, version;

	const char *model, *config;
	uint64_t layers;	     /* 0: all */
	const char *stages;	     /* "2" or, for run, a list "1,2,3" */
	uint64_t gather_budget;	     /* bytes */
	uint64_t sub_group_size;     /* elements */
	uint64_t pin_chunk;	     /* bytes */
	uint64_t reduce_bucket_size; /* elements */
	double grad_clip;	     /* the grads' norm at most; 0: no clipping */
	const char *param_order;     /* shape|model */
	const char *momentum_dtype;  /* fp32|bf16|auto */
	const char *params_back;     /* pinned|pageable|auto */
	const char *zero3_apply;     /* subgroup|batched */
	uint64_t world_size, rank;
	const char *format; /* md, csv, json */

	uint64_t platform; /* valid when given */
	const char *device;
	uint64_t device_mem_limit; /* bytes, 0: none */
	uint64_t seed;

	const char *variants; /* run: a list of master, pin, overlap, both, all */
	uint64_t runs, steps;
	const char *measure;			/* "A-B"; NULL: 2-6 cut to the steps */
	const char *pin_memory, *writeback_dep; /* on|off, host|event */
	uint64_t resume_at;			/* 0: never */
	uint64_t seq, micro_batch;
	const char *fwd_bwd;			 /* on|off */
	const char *fit_check;			 /* on|off */
	const char *cpus, *membind, *numa, *out; /* numa: auto|off */
	const char *tuning;			 /* off, auto or a file */
	const char *time_budget;		 /* tune */
	bool quiet;

	const char *sizes; /* bandwidth */

	const char *shapes;    /* ns */
	const char *ns_method; /* ns: gram|standard; NULL: both */
	uint64_t batch, reps;
	bool verify;

	double alpha, threshold; /* compare: significance, and the smallest slowdown in % */
	double phase_floor;	 /* compare: a phase's smallest change, in % of the apply */
	bool allow_device_change, ratios, exact;

	const char *image; /* plot: -o */

	char **files; /* report, compare, plot: the results files, in argv */
	int nfiles;

	uint64_t given; /* bit i: option i of the table was on the command line */

	/* --ds-config: a DeepSpeed config JSON, and the values it gave TEXT and CHOICE options */
	const char *ds_config;
	char ds_values[128]; /* (those options point here) */
	size_t ds_values_used;
};

/* The subcommand's name ("plan"). */
const char *mb_command_name(enum mb_command c);

/*
 * Parse ARGC/ARGV (argv[0] is the program) into *args. Returns 0, or
 * -MB_EINPUT with the message naming the option and the value. With
 * --ds-config FILE, the options the file names are set too, unless the
 * command line gives them, each value checked as the command line's would be
 * (a bad one is refused with FILE:LINE:COL and the key); what the file says
 * that is not used, "auto" and what a value means are said on stderr, one
 * line each.
 */
int mb_args_parse(struct mb_args *args, int argc, char **argv);

/* Whether the option called NAME ("model") was given on the command line. */
bool mb_args_given(const struct mb_args *args, const char *name);

/* Print the help of COMMAND (usage, what it does, its options) to OUT. */
void mb_print_help(FILE *out, enum mb_command command);

#endif

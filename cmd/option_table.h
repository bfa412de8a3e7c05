/*
 * option_table: the option table's types, shared by the files that read it
 * (options.c holds the table, args.c parses the command line against it,
 * help.c prints it); not for the commands, which see struct mb_args.
 */
#ifndef MB_OPTION_TABLE_H
#define MB_OPTION_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "options.h"

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

struct command {
	const char *name, *summary, *description;
};

/* Every option, in --help's order, and every command's name and texts. */
extern const struct option mb_options[];
extern const size_t mb_noptions;
extern const struct command mb_commands[MB_NCOMMANDS];

static inline void set_given(struct mb_args *args, size_t i)
{
	args->given[i / 64] |= 1ull << (i % 64);
}

static inline bool is_given(const struct mb_args *args, size_t i)
{
	return args->given[i / 64] & (1ull << (i % 64));
}

#endif

/*
 * args: the command line parsed against the option table into struct
 * mb_args (each value checked, each list's values once), a DeepSpeed
 * config's settings applied under the command line's, the stages and
 * variants resolved; and a run option's value as the ranks compare it.
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

	for (i = 0; i < mb_noptions; i++)
		if (strlen(mb_options[i].name) == len && !strncmp(mb_options[i].name, name, len))
			return &mb_options[i];
	return NULL;
}

static int set_defaults(struct mb_args *args)
{
	size_t i;
	int err;

	for (i = 0; i < mb_noptions; i++)
		if (mb_options[i].def &&
		    (err = set_option(args, &mb_options[i], mb_options[i].def)))
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
		if (!strcmp(argv[1], mb_commands[c].name)) {
			args->command = c;
			*next = 2;
			return 0;
		}
	}
	for (c = 0; c < MB_NCOMMANDS; c++)
		snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s%s",
			 c ? ", " : "", mb_commands[c].name);
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
				    word, mb_commands[args->command].name);
	eq = strchr(name, '=');
	len = eq ? (size_t)(eq - name) : strlen(name);
	o = find(name, len);
	if (!o)
		return mb_bad_input("unknown option '%s' (see muonbench %s --help)", word,
				    mb_commands[args->command].name);
	if (!(o->commands & ON(args->command)))
		return mb_bad_input("option '%s%s' does not apply to 'muonbench %s'", dashes(o),
				    o->name, mb_commands[args->command].name);
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
	if (is_given(args, (size_t)(o - mb_options)))
		fprintf(stderr, "muonbench: %s%s given again: the last, '%s', counts\n", dashes(o),
			o->name, o->kind == FLAG ? "on" : value);
	set_given(args, (size_t)(o - mb_options));
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
	if (is_given(args, (size_t)(o - mb_options)))
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
		 args->command == MB_CMD_RUN ? "" : mb_commands[args->command].name);
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
	return mb_grid_reads_gather_budget(
		stage, (enum mb_zero3_apply)mb_args_knob(args, MB_KNOB_ZERO3_APPLY, stage));
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

	args->pin_memory_on = is(args->knob[MB_KNOB_PIN_MEMORY], "on");
	args->fwd_bwd_on = is(args->knob[MB_KNOB_FWD_BWD], "on");
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

	for (k = 0; k < mb_noptions; k++) {
		if (!(mb_options[k].commands & ON(MB_CMD_RUN)))
			continue;
		if (!i--) {
			if (is_rank_own(&mb_options[k]))
				buf[0] = '\0';
			else
				value_text(args, &mb_options[k], buf, len);
			return mb_options[k].name;
		}
	}
	return NULL;
}

bool mb_args_given(const struct mb_args *args, const char *name)
{
	const struct option *o = find(name, strlen(name));

	return o && is_given(args, (size_t)(o - mb_options));
}

unsigned mb_args_knob(const struct mb_args *args, enum mb_knob k, unsigned stage)
{
	int i = args->knob[k] ? mb_knob_word_at(k, args->knob[k], stage) : 0;

	return i < 0 ? 0 : (unsigned)i;
}

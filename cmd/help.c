/*
 * help: a command's --help, from the option table.
 */
#include "option_table.h"

#include <stdio.h>
#include <string.h>

#include "mb_config.h"

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

	for (i = 0; i < mb_noptions; i++) {
		const struct option *o = &mb_options[i];

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
	const struct command *c = &mb_commands[command];
	char models[512];
	int i;

	if (command == MB_CMD_RUN) {
		fprintf(out, "usage: muonbench [COMMAND] [options]\n\ncommands:\n");
		for (i = 0; i < MB_NCOMMANDS; i++)
			fprintf(out, "  %-10s %s\n", mb_commands[i].name, mb_commands[i].summary);
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

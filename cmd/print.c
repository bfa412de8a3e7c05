/*
 * print: text fields for machine-read output, quoted as each format wants.
 */
#include "print.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* TEXT as a CSV field: quoted when it holds a comma, a quote or a newline. */
void mb_print_csv_text(const char *text)
{
	if (!strpbrk(text, ",\"\n\r")) {
		fputs(text, stdout);
		return;
	}
	putchar('"');
	for (; *text; text++) {
		if (*text == '"')
			putchar('"');
		putchar(*text);
	}
	putchar('"');
}

void mb_print_json_text(const char *text)
{
	putchar('"');
	for (; *text; text++) {
		unsigned char c = (unsigned char)*text;

		if (c == '"' || c == '\\')
			printf("\\%c", c);
		else if (c < 0x20)
			printf("\\u%04x", c);
		else
			putchar(c);
	}
	putchar('"');
}

void mb_print_md_text(const char *text)
{
	for (; *text; text++) {
		if (*text == '|')
			fputs("\\|", stdout);
		else if (*text == '\n' || *text == '\r')
			putchar(' ');
		else
			putchar(*text);
	}
}

static void print_value(const struct mb_field *f, bool json)
{
	if (f->kind == MB_FIELD_U64)
		printf("%llu", (unsigned long long)f->u);
	else if (f->kind != MB_FIELD_TEXT && isnan(f->num))
		printf("%s", json ? "null" : "");
	else if (f->kind == MB_FIELD_RATE)
		printf("%.4f", f->num);
	else if (f->kind == MB_FIELD_FIGURE)
		printf("%.9g", f->num);
	else if (json)
		mb_print_json_text(f->text);
	else
		mb_print_csv_text(f->text);
}

void mb_print_record(const struct mb_field *f, size_t n, bool json, bool first)
{
	size_t k;

	if (!json && first) {
		for (k = 0; k < n; k++)
			printf("%s%s", k ? "," : "", f[k].key);
		printf("\n");
	}
	printf("%s", json ? (first ? "[\n  {" : ",\n  {") : "");
	for (k = 0; k < n; k++) {
		printf("%s", k ? "," : "");
		if (json)
			printf("%s\"%s\": ", k ? " " : "", f[k].key);
		print_value(&f[k], json);
	}
	printf("%s", json ? "}" : "\n");
}

void mb_print_records_end(bool json, bool any)
{
	if (json)
		printf("%s", any ? "\n]\n" : "[]\n");
}

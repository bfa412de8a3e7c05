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

/* The length of the UTF-8 character at S (RFC 3629), or 0 where S is not one. */
static size_t utf8_len(const unsigned char *s)
{
	unsigned lo = 0x80, hi = 0xbf;
	size_t n, i;

	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		n = 2;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		n = 3, lo = s[0] == 0xe0 ? 0xa0 : 0x80, hi = s[0] == 0xed ? 0x9f : 0xbf;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		n = 4, lo = s[0] == 0xf0 ? 0x90 : 0x80, hi = s[0] == 0xf4 ? 0x8f : 0xbf;
	else
		return 0;
	for (i = 1; i < n; i++, lo = 0x80, hi = 0xbf)
		if (s[i] < lo || s[i] > hi) /* the NUL that ends TEXT stops it too */
			return 0;
	return n;
}

void mb_print_json_text(const char *text)
{
	const unsigned char *s = (const unsigned char *)text;
	size_t n;

	putchar('"');
	while (*s) {
		if (*s == '"' || *s == '\\')
			printf("\\%c", *s);
		else if (*s < 0x20)
			printf("\\u%04x", *s);
		else if (*s < 0x80)
			putchar(*s);
		else if ((n = utf8_len(s))) {
			fwrite(s, 1, n, stdout);
			s += n;
			continue;
		} else { /* not UTF-8 (a file's or a driver's name): the JSON text stays valid */
			fputs("\\ufffd", stdout);
		}
		s++;
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
		printf("%.6g", f->num);
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

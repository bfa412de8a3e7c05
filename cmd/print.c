/*
 * print: text fields for machine-read output, quoted as each format wants.
 */
#include "print.h"

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

/*
 * print: text fields for output (CSV, JSON, Markdown), quoted as each format wants.
 */
#include "print.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "mb_num.h"
#include "mb_phase.h"

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

/*
 * The Markdown of the character at S into OUT (at least 8 bytes, NUL ended);
 * returns how many bytes of S it took (at least 1).
 */
static size_t md_char(const unsigned char *s, char *out)
{
	size_t n;

	if (*s == '|' || *s == '\\') { /* a backslash too: one at a cell's end would escape its '|'
					*/
		snprintf(out, 8, "\\%c", *s);
	} else if (*s == '\n' || *s == '\r' || *s == '\t') {
		snprintf(out, 8, " ");
	} else if (*s < 0x20 || *s == 0x7f) { /* ESC and the rest: shown, not obeyed */
		snprintf(out, 8, "\\x%02x", *s);
	} else if (*s < 0x80) {
		snprintf(out, 8, "%c", *s);
	} else if (!(n = utf8_len(s))) { /* not UTF-8: a lone 0x9b is a terminal's CSI */
		snprintf(out, 8, "\xef\xbf\xbd");
	} else if (s[0] == 0xc2 && s[1] < 0xa0) { /* U+0080 to U+009F: C1 controls */
		snprintf(out, 8, "\\u%04x", s[1]);
		return n;
	} else {
		memcpy(out, s, n);
		out[n] = '\0';
		return n;
	}
	return 1;
}

void mb_print_md_text(const char *text)
{
	const unsigned char *s = (const unsigned char *)text;
	char c[8];

	while (*s) {
		s += md_char(s, c);
		fputs(c, stdout);
	}
}

const char *mb_md(char *buf, size_t len, const char *text)
{
	const unsigned char *s = (const unsigned char *)text;
	size_t used = 0, k, n;
	char c[8];

	while (*s) {
		k = md_char(s, c);
		n = strlen(c);
		if (used + n >= len)
			break;
		memcpy(buf + used, c, n);
		used += n;
		s += k;
	}
	if (len)
		buf[used] = '\0';
	return buf;
}

/* F's value in CSV (JSON: true), a number or the text as each format quotes it. */
static void print_value(const struct mb_field *f, bool json)
{
	if (f->kind == MB_FIELD_U64)
		printf("%llu", (unsigned long long)f->u);
	else if (f->kind == MB_FIELD_BOOL)
		printf("%s", f->u ? (json ? "true" : "yes") : (json ? "false" : "no"));
	else if (f->kind == MB_FIELD_RAW)
		printf("%s", *f->text ? f->text : json ? "null" : "");
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

static void csv_record(const struct mb_field *f, size_t n, bool first)
{
	size_t k;

	if (first) {
		for (k = 0; k < n; k++)
			printf("%s%s", k ? "," : "", f[k].key);
		printf("\n");
	}
	for (k = 0; k < n; k++) {
		printf("%s", k ? "," : "");
		print_value(&f[k], false);
	}
	printf("\n");
}

/* CSV's and Markdown's end: nothing after the last record. */
static void no_end(bool any)
{
	(void)any;
}

void mb_print_json_members(const struct mb_field *f, size_t n, const char *sep)
{
	size_t k;

	for (k = 0; k < n; k++) {
		printf("%s\"%s\": ", k ? sep : "", f[k].key);
		print_value(&f[k], true);
	}
}

static void json_record(const struct mb_field *f, size_t n, bool first)
{
	printf("%s", first ? "[\n  {" : ",\n  {");
	mb_print_json_members(f, n, ", ");
	printf("}");
}

static void json_end(bool any)
{
	printf("%s", any ? "\n]\n" : "[]\n");
}

static bool has_value(const struct mb_field *f)
{
	return f->kind == MB_FIELD_TEXT || f->kind == MB_FIELD_U64 || f->kind == MB_FIELD_BOOL ||
	       (f->kind == MB_FIELD_RAW ? *f->text : !isnan(f->num));
}

static void md_record(const struct mb_field *f, size_t n, bool first)
{
	size_t k;

	if (first) {
		printf("|");
		for (k = 0; k < n; k++)
			printf(*f[k].key ? " %s |" : " |", f[k].key);
		printf("\n|");
		for (k = 0; k < n; k++)
			printf("%s", f[k].right ? "---:|" : "---|");
		printf("\n");
	}
	printf("|");
	for (k = 0; k < n; k++) {
		if (!has_value(&f[k])) {
			printf(" |");
			continue;
		}
		printf(" ");
		if (f[k].kind == MB_FIELD_TEXT)
			mb_print_md_text(f[k].text);
		else
			print_value(&f[k], false);
		printf(" |");
	}
	printf("\n");
}

static const struct mb_printer csv = { csv_record, no_end }, json = { json_record, json_end },
			       md = { md_record, no_end };

const struct mb_printer *mb_printer(enum mb_format format)
{
	return format == MB_FORMAT_JSON ? &json : format == MB_FORMAT_MD ? &md : &csv;
}

size_t mb_phase_fields(struct mb_field *f, const char *hidden, const char *const *text)
{
	size_t k, n = 0;

	for (k = 0; k < MB_NPHASES; k++) {
		f[n++] = MB_FIELD_T(mb_phases[k].name, text[k]);
		if (k == MB_PHASE_D2H)
			f[n++] = MB_FIELD_T(hidden, text[MB_NPHASES]);
	}
	return n;
}

const char *mb_fmt_na(char *buf, size_t len, double v, int decimals)
{
	if (isnan(v))
		return "n/a";
	return mb_fmt_real(buf, len, v, decimals);
}

const char *mb_fmt_grouped(char *buf, size_t len, uint64_t v)
{
	char digits[32];
	size_t n, i, o = 0;

	n = (size_t)snprintf(digits, sizeof(digits), "%" PRIu64, v);
	for (i = 0; i < n && o + 2 < len; i++) {
		if (i && (n - i) % 3 == 0)
			buf[o++] = ',';
		buf[o++] = digits[i];
	}
	buf[o] = '\0';
	return buf;
}

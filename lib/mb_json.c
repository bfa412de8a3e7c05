/*
 * mb_json: cJSON parsing plus a recursive-descent grammar check (RFC 8259)
 * that runs only to explain a failure.
 */
#include "mb_json.h"

#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mb_err.h"
#include "mb_file.h"

#define DEPTH_MAX 512

struct cursor {
	const char *text;
	size_t len, pos;
	const char *expected; /* set at the first error */
	size_t errpos;
	/* mb_json_where: the value to find, by its index in document order */
	size_t target, seen, start, end;
	bool found;
};

static int peek(const struct cursor *c)
{
	return c->pos < c->len ? (unsigned char)c->text[c->pos] : -1;
}

static bool fail(struct cursor *c, const char *expected)
{
	c->expected = expected;
	c->errpos = c->pos;
	return false;
}

static void skip_space(struct cursor *c)
{
	while (peek(c) == ' ' || peek(c) == '\t' || peek(c) == '\n' || peek(c) == '\r')
		c->pos++;
}

static bool literal(struct cursor *c, const char *word)
{
	size_t n = strlen(word);

	if (c->len - c->pos < n || memcmp(c->text + c->pos, word, n))
		return fail(c, "a value (true, false and null are lowercase)");
	c->pos += n;
	return true;
}

static bool digits(struct cursor *c, const char *expected)
{
	if (!isdigit(peek(c)))
		return fail(c, expected);
	while (isdigit(peek(c)))
		c->pos++;
	return true;
}

static bool number(struct cursor *c)
{
	if (peek(c) == '-')
		c->pos++;
	if (peek(c) == '0')
		c->pos++;
	else if (!digits(c, "a digit"))
		return false;
	if (peek(c) == '.') {
		c->pos++;
		if (!digits(c, "a digit after the decimal point"))
			return false;
	}
	if (peek(c) == 'e' || peek(c) == 'E') {
		c->pos++;
		if (peek(c) == '+' || peek(c) == '-')
			c->pos++;
		if (!digits(c, "a digit in the exponent"))
			return false;
	}
	return true;
}

/* The four hex digits of a \uXXXX escape at the cursor, into *u. */
static bool hex4(struct cursor *c, unsigned *u)
{
	int i, ch;

	*u = 0;
	for (i = 0; i < 4; i++, c->pos++) {
		ch = peek(c);
		if (ch < 0 || !isxdigit(ch))
			return fail(c, "four hex digits after \\u");
		*u = *u * 16 + (unsigned)(isdigit(ch) ? ch - '0' : (tolower(ch) - 'a' + 10));
	}
	return true;
}

/* After "\u": a code point other than NUL, surrogates in pairs. */
static bool unicode_escape(struct cursor *c)
{
	unsigned u, low;

	if (!hex4(c, &u))
		return false;
	if (!u) {
		c->pos -= 6; /* at the backslash */
		return fail(c, "a character other than \\u0000 (names end at NUL)");
	}
	if (u >= 0xdc00 && u <= 0xdfff) {
		c->pos -= 6;
		return fail(c, "a high surrogate before this low one");
	}
	if (u < 0xd800 || u > 0xdbff)
		return true;
	if (c->len - c->pos < 2 || memcmp(c->text + c->pos, "\\u", 2))
		return fail(c, "\\u and a low surrogate after a high surrogate");
	c->pos += 2;
	if (!hex4(c, &low))
		return false;
	if (low < 0xdc00 || low > 0xdfff) {
		c->pos -= 6;
		return fail(c, "a low surrogate (\\udc00 to \\udfff) after a high surrogate");
	}
	return true;
}

/*
 * After a byte >= 0x80 in a string (at c->pos): one whole UTF-8 character
 * (RFC 3629: shortest form, no surrogates, at most U+10FFFF). JSON text is
 * UTF-8, and what muonbench prints of it (plan --format json) must stay so.
 */
static const char utf8_expected[] = "UTF-8 text (the file must be UTF-8)";

static bool utf8_char(struct cursor *c)
{
	const char *expected = utf8_expected;
	int ch = peek(c), lo = 0x80, hi = 0xbf, more, b;

	if (ch >= 0xc2 && ch <= 0xdf)
		more = 1;
	else if (ch >= 0xe0 && ch <= 0xef)
		more = 2, lo = ch == 0xe0 ? 0xa0 : 0x80, hi = ch == 0xed ? 0x9f : 0xbf;
	else if (ch >= 0xf0 && ch <= 0xf4)
		more = 3, lo = ch == 0xf0 ? 0x90 : 0x80, hi = ch == 0xf4 ? 0x8f : 0xbf;
	else
		return fail(c, expected);
	for (b = 1; b <= more; b++) {
		int next = c->pos + (size_t)b < c->len ? (unsigned char)c->text[c->pos + (size_t)b]
						       : -1;

		if (next < (b == 1 ? lo : 0x80) || next > (b == 1 ? hi : 0xbf))
			return fail(c, expected);
	}
	c->pos += (size_t)more + 1;
	return true;
}

static bool string(struct cursor *c)
{
	int ch;

	c->pos++; /* the opening quote */
	for (;;) {
		ch = peek(c);
		if (ch < 0)
			return fail(c, "a closing '\"' (the string is not terminated)");
		if (ch < 0x20)
			return fail(c, "a printable character (control characters in "
				       "strings must be escaped)");
		if (ch >= 0x80) {
			if (!utf8_char(c))
				return false;
			continue;
		}
		c->pos++;
		if (ch == '"')
			return true;
		if (ch != '\\')
			continue;
		ch = peek(c);
		if (ch < 0 || !strchr("\"\\/bfnrtu", ch))
			return fail(c,
				    "an escape: one of \\\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX");
		c->pos++;
		if (ch == 'u' && !unicode_escape(c))
			return false;
	}
}

static bool value(struct cursor *c, int depth);
static bool bare_value(struct cursor *c, int depth);

static bool members(struct cursor *c, int depth, bool object)
{
	const char *after = object ? "',' or '}' after an object member"
				   : "',' or ']' after an array element";
	int close = object ? '}' : ']';

	c->pos++; /* the opening bracket */
	skip_space(c);
	if (peek(c) == close) {
		c->pos++;
		return true;
	}
	for (;;) {
		if (object) {
			if (peek(c) != '"')
				return fail(c, "'\"' to start a key");
			if (!string(c))
				return false;
			skip_space(c);
			if (peek(c) != ':')
				return fail(c, "':' after a key");
			c->pos++;
		}
		if (!value(c, depth + 1))
			return false;
		skip_space(c);
		if (peek(c) == close) {
			c->pos++;
			return true;
		}
		if (peek(c) != ',')
			return fail(c, after);
		c->pos++;
		skip_space(c);
	}
}

/* One value at the cursor; the one mb_json_where looks for is recorded. */
static bool value(struct cursor *c, int depth)
{
	size_t index = c->seen++, start;
	bool ok;

	if (depth > DEPTH_MAX)
		return fail(c, "less nesting (at most 512 levels)");
	skip_space(c);
	start = c->pos;
	ok = bare_value(c, depth);
	if (ok && index == c->target) {
		c->start = start;
		c->end = c->pos;
		c->found = true;
	}
	return ok;
}

static bool bare_value(struct cursor *c, int depth)
{
	switch (peek(c)) {
	case '{':
		return members(c, depth, true);
	case '[':
		return members(c, depth, false);
	case '"':
		return string(c);
	case 't':
		return literal(c, "true");
	case 'f':
		return literal(c, "false");
	case 'n':
		return literal(c, "null");
	default:
		if (peek(c) == '-' || isdigit(peek(c)))
			return number(c);
		return fail(c, "a value");
	}
}

static bool check(struct cursor *c)
{
	if (!value(c, 0))
		return false;
	skip_space(c);
	if (c->pos != c->len)
		return fail(c, "the end of the input after the top-level value");
	return true;
}

static void describe(const struct cursor *c, char *buf, size_t len)
{
	int ch = c->errpos < c->len ? (unsigned char)c->text[c->errpos] : -1;

	if (ch < 0)
		snprintf(buf, len, "the end of the input");
	else if (ch == '\n')
		snprintf(buf, len, "a line break");
	else if (isprint(ch))
		snprintf(buf, len, "'%c'", ch);
	else
		snprintf(buf, len, "byte 0x%02x", ch);
}

/* The line and column (from 1) of offset POS in TEXT. */
static void position(const char *text, size_t pos, size_t *line, size_t *col)
{
	size_t i;

	*line = *col = 1;
	for (i = 0; i < pos; i++) {
		++*col;
		if (text[i] == '\n') {
			++*line;
			*col = 1;
		}
	}
}

static int syntax_error(const char *source, struct cursor *c)
{
	size_t line, col;
	char found[32];

	position(c->text, c->errpos, &line, &col);
	describe(c, found, sizeof(found));
	/* a byte that is not text: where it is, for an editor that shows no column */
	if (c->expected == utf8_expected)
		return mb_bad_input("%s:%zu:%zu: expected %s, found %s at byte offset %zu", source,
				    line, col, c->expected, found, c->errpos);
	return mb_bad_input("%s:%zu:%zu: expected %s, found %s", source, line, col, c->expected,
			    found);
}

int mb_json_parse(const char *text, size_t len, const char *source, cJSON **out)
{
	struct cursor c = { .text = text, .len = len };

	if (!check(&c))
		return syntax_error(source, &c);
	*out = cJSON_ParseWithLength(text, len);
	if (!*out)
		return mb_bad_input("%s: cJSON could not parse this JSON (too deep, or out of "
				    "memory)",
				    source);
	return 0;
}

/* Count the values of the tree under V before NODE in document order, into *index. */
static bool preorder_index(const cJSON *v, const cJSON *node, size_t *index)
{
	const cJSON *child;

	if (v == node)
		return true;
	++*index;
	for (child = v->child; child; child = child->next)
		if (preorder_index(child, node, index))
			return true;
	return false;
}

const char *mb_json_type_name(const cJSON *v)
{
	if (cJSON_IsString(v))
		return "a string";
	if (cJSON_IsBool(v))
		return "a boolean";
	if (cJSON_IsNull(v))
		return "null";
	if (cJSON_IsArray(v))
		return "a list";
	if (cJSON_IsObject(v))
		return "an object";
	return "a number";
}

bool mb_json_where(const char *text, size_t len, const cJSON *root, const cJSON *node,
		   struct mb_json_span *out)
{
	struct cursor c = { .text = text, .len = len };

	if (!preorder_index(root, node, &c.target) || !check(&c) || !c.found)
		return false;
	out->start = c.start;
	out->end = c.end;
	position(text, c.start, &out->line, &out->col);
	return true;
}

int mb_json_read_file(const char *path, const char *what, char **text, size_t *len)
{
	FILE *f;
	int err = 0;

	*text = NULL;
	*len = 0;
	if ((err = mb_file_open_read(path, what, &f)))
		return err;
	*text = malloc(MB_JSON_FILE_MAX + 1);
	if (!*text) {
		fclose(f);
		return mb_fail("out of host memory reading '%s'", path);
	}
	*len = fread(*text, 1, MB_JSON_FILE_MAX + 1, f);
	if (ferror(f))
		err = mb_bad_input("cannot read '%s': %s", path, strerror(errno));
	else if (*len > MB_JSON_FILE_MAX)
		err = mb_bad_input("'%s' is larger than 16 MiB: not a %s", path, what);
	fclose(f);
	if (err) {
		free(*text);
		*text = NULL;
	}
	return err;
}

/* PATH's temporary beside it, into TMP (SIZE bytes); false when the name does not fit. */
static bool tmp_name(const char *path, char *tmp, size_t size)
{
	int n = snprintf(tmp, size, "%s.tmp%ld", path, (long)getpid());

	return n > 0 && (size_t)n < size;
}

/* PATH's temporary into TMP, refused where the rename would replace what is not a file. */
static int out_path(const char *path, char *tmp, size_t size)
{
	struct stat st;

	if (!lstat(path, &st) && !S_ISREG(st.st_mode))
		return mb_bad_input("'%s' is not a regular file: muonbench writes it whole, and "
				    "the rename that does would replace it; give a file's path",
				    path);
	if (!tmp_name(path, tmp, size))
		return mb_bad_input("'%s': the path is too long", path);
	return 0;
}

int mb_json_check_out(const char *path)
{
	char tmp[4200];
	FILE *f;
	int err;

	if ((err = out_path(path, tmp, sizeof(tmp))))
		return err;
	if (!(f = fopen(tmp, "wx")))
		return mb_bad_input("cannot write '%s': %s", tmp, strerror(errno));
	fclose(f);
	unlink(tmp);
	return 0;
}

int mb_json_write_file(const char *path, const char *text)
{
	char tmp[4200];
	FILE *f;
	int err, bad;

	if ((err = out_path(path, tmp, sizeof(tmp))))
		return err;
	if (!(f = fopen(tmp, "w")))
		return mb_fail("cannot write '%s': %s", tmp, strerror(errno));
	bad = fputs(text, f) < 0;
	if (fclose(f) || bad || rename(tmp, path)) {
		int e = errno;

		unlink(tmp);
		return mb_fail("cannot write '%s': %s", path, strerror(e));
	}
	return 0;
}

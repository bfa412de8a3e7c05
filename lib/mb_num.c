/*
 * mb_num: strict parsing of whole numbers (with units) and their printing.
 *
 * The value is computed exactly in 128-bit integers: digits, a decimal
 * exponent, and a unit multiplier, so 1.5Ki is 1536 and 1e-3 is refused
 * rather than rounded.
 */
#include "mb_num.h"

#include <errno.h>
#include <math.h>
#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mb_err.h"

bool mb_num_is_decimal(const char *text)
{
	return isdigit((unsigned char)*text) && !text[strspn(text, "0123456789.eE+-")];
}

bool mb_num_underflows(const char *text, double d)
{
	size_t mantissa = strcspn(text, "eE");

	return d == 0 && strcspn(text, "123456789") < mantissa;
}

typedef unsigned __int128 u128;

struct unit {
	const char *suffix;
	uint64_t mult;
};

static const struct unit units[] = {
	{ "Ki", 1ull << 10 }, { "Mi", 1ull << 20 },   { "Gi", 1ull << 30 },
	{ "Ti", 1ull << 40 }, { "K", 1000ull },	      { "k", 1000ull },
	{ "M", 1000000ull },  { "G", 1000000000ull }, { "T", 1000000000000ull },
};

/* Find the unit that TEXT is exactly (with an optional trailing 'B'). */
static bool parse_unit(const char *text, uint64_t *mult)
{
	size_t i, n;

	if (!*text || !strcmp(text, "B")) {
		*mult = 1;
		return true;
	}
	for (i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		n = strlen(units[i].suffix);
		if (strncmp(text, units[i].suffix, n))
			continue;
		if (!text[n] || !strcmp(text + n, "B")) {
			*mult = units[i].mult;
			return true;
		}
	}
	return false;
}

enum parse_result { PARSE_OK, PARSE_SYNTAX, PARSE_FRACTION, PARSE_RANGE, PARSE_DIGITS };

/*
 * Read "digits[.digits][e[+-]digits]" from *p. Sets the significand (at most
 * 20 significant digits) and the power of ten; advances *p past the number.
 */
/* Append digit D to *DIGITS; false past 20 significant digits. */
static bool push_digit(u128 *digits, int d, int *nsig)
{
	if (*digits || d)
		++*nsig;
	*digits = *digits * 10 + (u128)d;
	return *nsig <= 20;
}

/*
 * Read "digits[.digits][e[+-]digits]" from *p. Sets the significand (at most
 * 20 significant digits; zeros that end a fraction are dropped) and the power
 * of ten; advances *p past the number.
 */
static enum parse_result parse_decimal(const char **p, u128 *digits, long *exp10)
{
	const char *s = *p;
	int ndigits = 0, nsig = 0;
	long e = 0, fracdigits = 0, zeros = 0;
	bool neg = false, point = false;

	*digits = 0;
	for (; isdigit((unsigned char)*s) || (*s == '.' && !point); s++) {
		if (*s == '.') {
			point = true;
			continue;
		}
		ndigits++;
		if (point && *s == '0') {
			zeros++; /* kept only if a nonzero digit follows */
			continue;
		}
		for (; zeros > 0; zeros--, fracdigits++)
			if (!push_digit(digits, 0, &nsig))
				return PARSE_DIGITS;
		if (!push_digit(digits, *s - '0', &nsig))
			return PARSE_DIGITS;
		fracdigits += point;
	}
	if (!ndigits)
		return PARSE_SYNTAX;
	if (*s == 'e' || *s == 'E') {
		s++;
		if (*s == '+' || *s == '-')
			neg = *s++ == '-';
		if (!isdigit((unsigned char)*s))
			return PARSE_SYNTAX;
		while (isdigit((unsigned char)*s)) {
			if (e < 100000)
				e = e * 10 + (*s - '0');
			s++;
		}
	}
	*exp10 = (neg ? -e : e) - fracdigits;
	*p = s;
	return PARSE_OK;
}

/* DIGITS * 10^EXP10 * MULT as a whole uint64. */
static enum parse_result scale(u128 digits, long exp10, uint64_t mult, uint64_t *out)
{
	u128 v = digits * mult, den = 1;

	if (!digits) {
		*out = 0;
		return PARSE_OK;
	}
	for (; exp10 > 0; exp10--) {
		if (v > UINT64_MAX)
			return PARSE_RANGE;
		v *= 10;
	}
	for (; exp10 < 0; exp10++) {
		if (den > v)
			return PARSE_FRACTION;
		den *= 10;
	}
	if (v % den)
		return PARSE_FRACTION;
	v /= den;
	if (v > UINT64_MAX)
		return PARSE_RANGE;
	*out = (uint64_t)v;
	return PARSE_OK;
}

static int parse(const char *what, const char *text, uint64_t min, uint64_t max, bool allow_unit,
		 uint64_t *out)
{
	const char *p = text, *kind = allow_unit ? "size" : "number";
	enum parse_result r;
	uint64_t mult = 1, v = 0;
	u128 digits;
	long exp10;

	r = parse_decimal(&p, &digits, &exp10);
	if (r == PARSE_OK && *p && (!allow_unit || !parse_unit(p, &mult)))
		r = PARSE_SYNTAX;
	if (r == PARSE_OK)
		r = scale(digits, exp10, mult, &v);
	switch (r) {
	case PARSE_OK:
		break;
	case PARSE_SYNTAX:
		if (allow_unit)
			return mb_bad_input("%s: invalid size '%s' (expected a whole number "
					    "with an optional K, M, G, T, Ki, Mi, Gi or Ti suffix)",
					    what, text);
		return mb_bad_input("%s: invalid number '%s' (expected a whole number "
				    "such as 12 or 1e9)",
				    what, text);
	case PARSE_FRACTION:
		return mb_bad_input("%s: %s '%s' is not a whole number", what, kind, text);
	case PARSE_RANGE:
		return mb_bad_input("%s: %s '%s' is too large (at most %llu)", what, kind, text,
				    (unsigned long long)max);
	case PARSE_DIGITS:
		return mb_bad_input("%s: %s '%s' has more than 20 significant digits", what, kind,
				    text);
	}
	if (v < min || v > max)
		return mb_bad_input("%s: %s '%s' is out of range (%llu to %llu)", what, kind, text,
				    (unsigned long long)min, (unsigned long long)max);
	*out = v;
	return 0;
}

int mb_parse_count(const char *what, const char *text, uint64_t min, uint64_t max, uint64_t *out)
{
	return parse(what, text, min, max, false, out);
}

int mb_parse_size(const char *what, const char *text, uint64_t min, uint64_t max, uint64_t *out)
{
	return parse(what, text, min, max, true, out);
}

/* Append SIZE to OUT unless it is there already. */
static int add_size(const char *what, const char *text, uint64_t size, uint64_t *out, size_t max,
		    size_t *n)
{
	size_t i;

	for (i = 0; i < *n; i++)
		if (out[i] == size)
			return 0;
	if (*n == max)
		return mb_bad_input("%s: more than %zu sizes in '%s'", what, max, text);
	out[(*n)++] = size;
	return 0;
}

int mb_parse_size_list(const char *what, const char *text, uint64_t min, uint64_t max,
		       uint64_t *out, size_t maxn, size_t *n)
{
	char item[128], *dots;
	const char *p = text;
	uint64_t a, b;
	size_t len;
	int err;

	*n = 0;
	do {
		len = strcspn(p, ",");
		if (len >= sizeof(item))
			return mb_bad_input("%s: invalid size '%.*s...' in '%s'", what, 32, p,
					    text);
		snprintf(item, sizeof(item), "%.*s", (int)len, p);
		dots = strstr(item, "..");
		if (dots)
			*dots = '\0';
		if ((err = mb_parse_size(what, item, min, max, &a)))
			return err;
		b = a;
		if (dots && (err = mb_parse_size(what, dots + 2, min, max, &b)))
			return err;
		if (b < a)
			return mb_bad_input("%s: the range '%s..%s' runs backwards", what, item,
					    dots + 2);
		for (; a <= b; a *= 2) {
			if ((err = add_size(what, text, a, out, maxn, n)))
				return err;
			if (a > b / 2)
				break;
		}
		p += len;
	} while (*p++ == ',');
	return 0;
}

int mb_parse_duration(const char *what, const char *text, uint64_t *seconds)
{
	static const char suffixes[] = "smh";
	static const uint64_t scale[] = { 1, 60, 3600 };
	char *end;
	const char *u;
	uint64_t v;

	errno = 0;
	v = strtoull(text, &end, 10);
	u = *end ? strchr(suffixes, *end) : suffixes;
	if (!isdigit((unsigned char)text[0]) || errno || !u || (*end && end[1]) || !v ||
	    v > 7 * 24 * 3600 / scale[u - suffixes])
		return mb_bad_input("%s: invalid duration '%s' (expected a whole number of s, m or "
				    "h from 1 s to a week, such as 90s, 10m or 1h)",
				    what, text);
	*seconds = v * scale[u - suffixes];
	return 0;
}

#define SHAPE_DIM_MAX (1ull << 24)

int mb_parse_shapes(const char *what, const char *text, struct mb_shape *out, size_t max, size_t *n)
{
	char item[64], *x, *end;
	const char *p = text;
	size_t len;

	*n = 0;
	do {
		len = strcspn(p, ",");
		snprintf(item, sizeof(item), "%.*s", (int)(len < 63 ? len : 63), p);
		x = strchr(item, 'x');
		if (len > 63 || !x || *n == max)
			goto bad;
		*x = '\0';
		out[*n].rows = strtoull(item, &end, 10);
		if (!isdigit((unsigned char)item[0]) || *end)
			goto bad;
		out[*n].cols = strtoull(x + 1, &end, 10);
		if (!isdigit((unsigned char)x[1]) || *end)
			goto bad;
		if (!out[*n].rows || !out[*n].cols || out[*n].rows > SHAPE_DIM_MAX ||
		    out[*n].cols > SHAPE_DIM_MAX)
			goto bad;
		++*n;
		p += len;
	} while (*p++ == ',');
	return 0;
bad:
	if (*n == max)
		return mb_bad_input("%s: more than %zu shapes in '%s'", what, max, text);
	return mb_bad_input("%s: invalid shape '%.*s' in '%s' (expected ROWSxCOLS, each 1 to "
			    "%llu, such as 1024x3072)",
			    what, (int)len, p, text, SHAPE_DIM_MAX);
}

/* Print X / DIV with three significant digits and UNIT. */
static const char *fmt_scaled(char *buf, size_t len, double x, const char *unit)
{
	if (x >= 100)
		snprintf(buf, len, "%.0f %s", x, unit);
	else if (x >= 10)
		snprintf(buf, len, "%.1f %s", x, unit);
	else
		snprintf(buf, len, "%.2f %s", x, unit);
	return buf;
}

static const char *fmt_decimal(char *buf, size_t len, uint64_t n, const char *const sfx[5])
{
	double x = (double)n;
	int i = 0;

	if (n < 1000) {
		snprintf(buf, len, "%llu%s%s", (unsigned long long)n, *sfx[0] ? " " : "", sfx[0]);
		return buf;
	}
	while (x >= 999.5 && i < 4) {
		x /= 1000;
		i++;
	}
	return fmt_scaled(buf, len, x, sfx[i]);
}

const char *mb_fmt_bytes(char *buf, size_t len, uint64_t bytes)
{
	static const char *const sfx[5] = { "B", "kB", "MB", "GB", "TB" };

	return fmt_decimal(buf, len, bytes, sfx);
}

const char *mb_fmt_bytes_iec(char *buf, size_t len, uint64_t bytes)
{
	static const char *const sfx[5] = { "B", "KiB", "MiB", "GiB", "TiB" };
	double x = (double)bytes;
	int i = 0;

	while (x >= 1023.5 && i < 4) {
		x /= 1024;
		i++;
	}
	if (!i) {
		snprintf(buf, len, "%llu B", (unsigned long long)bytes);
		return buf;
	}
	return fmt_scaled(buf, len, x, sfx[i]);
}

const char *mb_fmt_count(char *buf, size_t len, uint64_t n)
{
	static const char *const sfx[5] = { "", "K", "M", "B", "T" };

	return fmt_decimal(buf, len, n, sfx);
}

const char *mb_fmt_gib(char *buf, size_t len, uint64_t bytes)
{
	snprintf(buf, len, "%.2f GiB", (double)bytes / (double)(1ull << 30));
	return buf;
}

const char *mb_fmt_peak(char *buf, size_t len, uint64_t bytes)
{
	return bytes >= (1ull << 30) ? mb_fmt_gib(buf, len, bytes)
				     : mb_fmt_bytes_iec(buf, len, bytes);
}

/* Fixed notation up to here; past it a figure's digits run on (1e296: 297 of them). */
#define FIXED_MAX 1e6

const char *mb_fmt_real(char *buf, size_t len, double v, int decimals)
{
	double a = fabs(v);

	if (isfinite(v) && a && (a >= FIXED_MAX || a < 0.5 * pow(10, -decimals)))
		snprintf(buf, len, "%.3g", v);
	else
		snprintf(buf, len, "%.*f", decimals, v);
	return buf;
}

const char *mb_fmt_secs(char *buf, size_t len, double s)
{
	if (isnan(s))
		snprintf(buf, len, "n/a");
	else if (s >= 1)
		mb_fmt_real(buf, len, s, 2);
	else
		snprintf(buf, len, "%.3g", s);
	return buf;
}

const char *mb_fmt_change(char *buf, size_t len, double x, double base)
{
	double pct = 100 * (x - base) / base;

	buf[0] = '\0';
	if (!(base > 0 && isfinite(x) && isfinite(pct)))
		return buf;
	if (fabs(pct) >= FIXED_MAX)
		snprintf(buf, len, " (%+.3g%%)", pct);
	else
		snprintf(buf, len, " (%+.0f%%)", pct);
	return buf;
}

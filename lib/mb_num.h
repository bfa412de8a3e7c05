/*
 * mb_num: whole numbers with units, read from the command line and printed
 * for people.
 *
 * Parsing is strict: the whole text must be a number; scientific notation is
 * accepted when its value is whole (1e9, 2.5e8). Sizes also take a suffix:
 * K M G T are powers of 1000, Ki Mi Gi Ti powers of 1024, and a trailing B is
 * allowed (512MiB). Errors are bad input, naming WHAT (the option) and the text.
 */
#ifndef MB_NUM_H
#define MB_NUM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Whether TEXT is a decimal number as muonbench writes and reads them: a
 * digit first, then digits, '.', an exponent (e or E, its sign): no space,
 * sign, hex, inf or nan. strtod still has to take all of it.
 */
bool mb_num_is_decimal(const char *text);

/*
 * Whether TEXT, a decimal number that strtod read as D, is too small to hold
 * (1e-400): D is 0 but a digit of its mantissa is not.
 */
bool mb_num_underflows(const char *text, double d);

/* Parse a count (no suffix) in [min, max] into *out. 0 or -MB_EINPUT. */
int mb_parse_count(const char *what, const char *text, uint64_t min, uint64_t max, uint64_t *out);

/* Parse a size in bytes (suffixes allowed) in [min, max] into *out. */
int mb_parse_size(const char *what, const char *text, uint64_t min, uint64_t max, uint64_t *out);

/*
 * Parse a list of sizes in [min, max] into OUT (room for MAX), the count
 * into *n: items separated by commas, each a size or a range A..B, which is
 * A, 2A, 4A ... up to B (B itself only if a power-of-two multiple of A). The
 * sizes are kept in the order given, each once. 0 or -MB_EINPUT.
 */
int mb_parse_size_list(const char *what, const char *text, uint64_t min, uint64_t max,
		       uint64_t *out, size_t maxn, size_t *n);

/*
 * Parse a duration, a whole number with s, m or h (seconds without), from 1
 * second to a week, into *seconds. 0 or -MB_EINPUT.
 */
int mb_parse_duration(const char *what, const char *text, uint64_t *seconds);

/* A matrix shape, ROWSxCOLS on the command line. */
struct mb_shape {
	uint64_t rows, cols;
};

/*
 * Parse "RxC[,RxC...]" (each dimension 1 to 2^24) into OUT (room for MAX),
 * the count into *n. 0 or -MB_EINPUT naming WHAT and the bad shape.
 */
int mb_parse_shapes(const char *what, const char *text, struct mb_shape *out, size_t max,
		    size_t *n);

/* "14.53 GB": decimal units, three significant digits. Returns buf. */
const char *mb_fmt_bytes(char *buf, size_t len, uint64_t bytes);

/* "512 MiB": binary units, three significant digits. Returns buf. */
const char *mb_fmt_bytes_iec(char *buf, size_t len, uint64_t bytes);

/* "12.09 GiB": always in GiB with two decimals, as the reference's tables. */
const char *mb_fmt_gib(char *buf, size_t len, uint64_t bytes);

/* Bytes as the reference's tables print them: GiB with two decimals, smaller in smaller units. */
const char *mb_fmt_peak(char *buf, size_t len, uint64_t bytes);

/* Seconds for people: "8.54", "0.612", "0.0312"; "n/a" for NaN. */
const char *mb_fmt_secs(char *buf, size_t len, double s);

/*
 * V with DECIMALS decimals into BUF (which it returns), or, where fixed
 * notation would not show it (1e6 or more, or so small it would read as 0),
 * three significant digits in scientific notation: 1.14e+20, 3e-09.
 */
const char *mb_fmt_real(char *buf, size_t len, double v, int decimals);

/* " (-33%)": X against BASE; "" where BASE is not positive (NaN: none) or X not finite. */
const char *mb_fmt_change(char *buf, size_t len, double x, double base);

/* "4.02 B", "751 M", "5.38 K", "12": a count for people. */
const char *mb_fmt_count(char *buf, size_t len, uint64_t n);

#endif

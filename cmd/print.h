/*
 * print: text fields for output (CSV, JSON, Markdown), quoted as each
 * format wants, to stdout.
 */
#ifndef MB_PRINT_H
#define MB_PRINT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>

#include "options.h"

/* TEXT as a CSV field: quoted when it holds a comma, a quote or a newline. */
void mb_print_csv_text(const char *text);

/*
 * TEXT as a JSON string, quotes included; a byte that is not part of a UTF-8
 * character is written \ufffd (the replacement character), so that the
 * output is valid JSON text whatever TEXT holds.
 */
void mb_print_json_text(const char *text);

/*
 * TEXT as Markdown (a table cell, a heading, a line of prose), to stdout:
 * '|' and a backslash escaped with a backslash, a line break or a tab a
 * space, another control character shown (ESC as \x1b, U+009B as \u009b),
 * not obeyed, and a byte that is not part of a UTF-8 character U+FFFD. Text
 * from an input file (a name, a reason) then neither moves the terminal nor
 * breaks the table.
 */
void mb_print_md_text(const char *text);

/* The most bytes the Markdown of N bytes of text takes, its NUL included. */
#define MB_MD_LEN(n) (4 * (n) + 1)

/*
 * TEXT as mb_print_md_text writes it, into BUF of LEN bytes, which it
 * returns (for printf's arguments); MB_MD_LEN(strlen(TEXT)) bytes hold it
 * all, and a shorter BUF cuts it between characters.
 */
const char *mb_md(char *buf, size_t len, const char *text);

/*
 * V with its thousands grouped, "4,022,468,096", into BUF of LEN bytes,
 * which it returns: an exact count that no unit can be mistaken for (a
 * count's "1.00 B" beside a size's "2.00 MiB" reads as one byte).
 */
const char *mb_fmt_grouped(char *buf, size_t len, uint64_t v);

/* V as mb_fmt_real writes it into BUF of LEN bytes, which it returns, or "n/a" where V is NaN. */
const char *mb_fmt_na(char *buf, size_t len, double v, int decimals);

/*
 * One field of a record: text, a count, a rate (6 significant digits), a
 * figure (9), a yes/no, or a number already written as text (RAW: a knob's
 * value as a results file has it; "" none). In a Markdown table the key is
 * the column's heading ("" none), the text a cell already written for
 * people ("1.23 s (+4%)"), and RIGHT aligns the column to the right.
 */
enum mb_field_kind {
	MB_FIELD_TEXT,
	MB_FIELD_U64,
	MB_FIELD_RATE,
	MB_FIELD_FIGURE,
	MB_FIELD_BOOL,
	MB_FIELD_RAW
};

struct mb_field {
	const char *key;
	enum mb_field_kind kind;
	const char *text;
	uint64_t u;
	double num; /* NaN: none (empty in CSV, null in JSON, no cell in Markdown) */
	bool right;
};

/*
 * A field of each kind, as a value; MB_FIELD_NONE: a field with no value;
 * MB_FIELD_TR and MB_FIELD_NR: a text and a count in a Markdown table's
 * right-aligned column.
 */
#define MB_FIELD_(k, kind, t, u, num, right) ((struct mb_field){ k, kind, t, u, num, right })
#define MB_FIELD_T(k, v)		     MB_FIELD_(k, MB_FIELD_TEXT, v, 0, 0, false)
#define MB_FIELD_N(k, v)		     MB_FIELD_(k, MB_FIELD_U64, NULL, (uint64_t)(v), 0, false)
#define MB_FIELD_R(k, v)		     MB_FIELD_(k, MB_FIELD_RATE, NULL, 0, v, false)
#define MB_FIELD_F(k, v)		     MB_FIELD_(k, MB_FIELD_FIGURE, NULL, 0, v, false)
#define MB_FIELD_B(k, v)		     MB_FIELD_(k, MB_FIELD_BOOL, NULL, (v) ? 1 : 0, 0, false)
#define MB_FIELD_RAW(k, v)		     MB_FIELD_(k, MB_FIELD_RAW, v, 0, 0, false)
#define MB_FIELD_NONE(k)		     MB_FIELD_(k, MB_FIELD_RATE, NULL, 0, NAN, false)
#define MB_FIELD_TR(k, v)		     MB_FIELD_(k, MB_FIELD_TEXT, v, 0, 0, true)
#define MB_FIELD_NR(k, v)		     MB_FIELD_(k, MB_FIELD_U64, NULL, (uint64_t)(v), 0, true)

/*
 * A printer of records of the same keys to stdout, one implementation per
 * format (as llama-bench's printer): CSV, a header line and a line a record;
 * JSON, a list of objects; Markdown, a table (its header and separator rows,
 * then a row a record: a cell " text |", a field with no value " |", its
 * text escaped as mb_print_md_text's). Call record for each, FIRST true for
 * the first, then end, ANY whether there was one. A command prints its own
 * headings and prose around a Markdown table, and a table's cells are for
 * people: its fields are not the CSV's.
 */
struct mb_printer {
	void (*record)(const struct mb_field *f, size_t n, bool first);
	void (*end)(bool any);
};

/* The printer of FORMAT. */
const struct mb_printer *mb_printer(enum mb_format format);

/*
 * The phases' cells of a Markdown table row, in mb_phases' order with the
 * writeback's hidden part after d2h's, into F: TEXT[k] phase k's, and
 * TEXT[MB_NPHASES] the hidden part's under the heading HIDDEN. Returns the
 * number of fields, MB_NPHASES + 1.
 */
size_t mb_phase_fields(struct mb_field *f, const char *hidden, const char *const *text);

/* The N fields at F as the members of a JSON object ("key": value), SEP between them. */
void mb_print_json_members(const struct mb_field *f, size_t n, const char *sep);

#endif

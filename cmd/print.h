/*
 * print: text fields for machine-read output (CSV, JSON), quoted as each
 * format wants, to stdout.
 */
#ifndef MB_PRINT_H
#define MB_PRINT_H

/* TEXT as a CSV field: quoted when it holds a comma, a quote or a newline. */
void mb_print_csv_text(const char *text);

/* TEXT as a JSON string, quotes included. */
void mb_print_json_text(const char *text);

/* TEXT inside a Markdown table cell: '|' escaped, line breaks as spaces. */
void mb_print_md_text(const char *text);

#endif

/*
 * mb_json: JSON text to a cJSON tree, with errors that say where and what.
 *
 * cJSON parses; when it refuses, a small grammar check of the same text finds
 * the first offending byte and says what was expected there, as
 * "FILE:LINE:COL: expected ',' or '}' after an object member, found ']'".
 * The config and tuning modules use this: no cJSON tree leaves them.
 */
#ifndef MB_JSON_H
#define MB_JSON_H

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

/*
 * Parse LEN bytes of TEXT; SOURCE names it in errors. On success *out is a
 * tree the caller frees with cJSON_Delete. Returns 0 or -MB_EINPUT.
 */
int mb_json_parse(const char *text, size_t len, const char *source, cJSON **out);

/* The most a JSON file muonbench reads may hold (a config, a DeepSpeed config). */
#define MB_JSON_FILE_MAX (16u << 20)

/*
 * The whole of file PATH, at most MB_JSON_FILE_MAX bytes, into a new
 * buffer *text (the caller frees it) of *len bytes. A file that cannot be
 * read, is not a regular file (a FIFO is refused, not waited on: see
 * mb_file_open_read) or is larger is -MB_EINPUT, saying it is "not a WHAT".
 */
int mb_json_read_file(const char *path, const char *what, char **text, size_t *len);

/*
 * Whether PATH may take a file that muonbench writes whole (a profile, a
 * tuning): -MB_EINPUT, saying why, when it is there and not a regular file (a
 * device, a FIFO, or a symlink, which the rename that replaces the file would
 * replace) or when a file cannot be made beside it. Call it before the work
 * whose result goes there.
 */
int mb_json_check_out(const char *path);

/*
 * Write TEXT to PATH whole: into PATH.tmpPID, then renamed over PATH, so
 * that a reader never sees part of it and a failure leaves PATH as it was.
 * A PATH that is not a regular file is refused as mb_json_check_out refuses
 * it; a write that fails is -MB_EFAIL.
 */
int mb_json_write_file(const char *path, const char *text);

/* Where a value is in the text: bytes [start, end), its first at line:col (from 1). */
struct mb_json_span {
	size_t start, end;
	size_t line, col;
};

/*
 * Where NODE, a value in the tree ROOT that mb_json_parse made of TEXT (LEN
 * bytes), is in TEXT, into *out (for errors that quote FILE:LINE:COL, and
 * for a number's own digits). Walks the text again: for a few values of a
 * small file. Returns false when NODE is not in ROOT's tree.
 */
bool mb_json_where(const char *text, size_t len, const cJSON *root, const cJSON *node,
		   struct mb_json_span *out);

/* What V is, for errors: "a string", "a number", "an object", ... */
const char *mb_json_type_name(const cJSON *v);

#endif

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

#include <stddef.h>

#include <cjson/cJSON.h>

/*
 * Parse LEN bytes of TEXT; SOURCE names it in errors. On success *out is a
 * tree the caller frees with cJSON_Delete. Returns 0 or -MB_EINPUT.
 */
int mb_json_parse(const char *text, size_t len, const char *source, cJSON **out);

#endif

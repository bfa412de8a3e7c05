/*
 * mb_embedded: files of the source tree compiled into the binary.
 *
 * The build turns every JSON file in configs/ and tuning/ and every .cl file
 * in kernels/ into a table (see scripts/embed.sh), so the binary runs from
 * anywhere without its sources.
 * The contents are NUL-terminated; size excludes the NUL.
 */
#ifndef MB_EMBEDDED_H
#define MB_EMBEDDED_H

#include <stddef.h>

struct mb_embedded_file {
	const char *path; /* as in the source tree: "configs/tiny.json" */
	const char *data;
	size_t size;
};

/* The table, ended by an entry whose path is NULL. */
extern const struct mb_embedded_file mb_embedded_files[];

/* The file at PATH, or NULL. */
const struct mb_embedded_file *mb_embedded_find(const char *path);

#endif

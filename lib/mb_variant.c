/*
 * mb_variant: the table of variants (see mb_variant.h), made from its rows.
 */
#include "mb_variant.h"

#include <string.h>

#define ROW_(e, n, pins, wb, pre, help) { n, pins, wb, pre, help },

const struct mb_variant_info mb_variants[MB_NVARIANTS] = { MB_VARIANTS(ROW_, ) };

int mb_variant_find(const char *name, size_t len)
{
	int v;

	for (v = 0; v < MB_NVARIANTS; v++)
		if (strlen(mb_variants[v].name) == len && !strncmp(name, mb_variants[v].name, len))
			return v;
	return -1;
}

const char *mb_variant_name(enum mb_variant v)
{
	return (unsigned)v < MB_NVARIANTS ? mb_variants[v].name : "?";
}

/*
 * mb_peer: the peer's Newton-Schulz lines (see mb_peer.h).
 */
#include "mb_peer.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mb_err.h"
#include "mb_file.h"

/* PyTorch's dtype names, in mb_precision's order */
static const char *const dtypes[MB_NPRECISIONS] = { "float32", "bfloat16", "float16" };

/* LINE (an "ns," line, its newline cut) into *E: 0, or why not into WHY. */
static int parse(char *line, struct mb_peer_ns *e, const char **why)
{
	char *field[6], *at = line, *comma, *end;
	int n = 0, k;

	/* split at every comma: an empty field is a field (strtok would drop it) */
	for (; at && n < 6; at = comma ? comma + 1 : NULL) {
		if ((comma = strchr(at, ',')))
			*comma = '\0';
		field[n++] = at;
	}
	if (n != 6 || at)
		return *why = "expected 6 fields: ns,RxC,METHOD,DTYPE,MEDIAN_S,TFLOPS", -1;
	if (sscanf(field[1], "%llux%llu%n", (unsigned long long *)&e->rows,
		   (unsigned long long *)&e->cols, &k) != 2 ||
	    field[1][k] || !e->rows || !e->cols)
		return *why = "the shape is not RxC", -1;
	for (k = 0; k < MB_NS_NMETHODS && strcmp(field[2], mb_ns_method_names[k]); k++)
		;
	if (k == MB_NS_NMETHODS)
		return *why = "the method is not gram or standard", -1;
	e->method = (enum mb_ns_method)k;
	for (k = 0; k < MB_NPRECISIONS && strcmp(field[3], dtypes[k]); k++)
		;
	if (k == MB_NPRECISIONS)
		return *why = "the dtype is not float32, bfloat16 or float16", -1;
	e->precision = (enum mb_precision)k;
	e->median_s = strtod(field[4], &end);
	if (*end || !(e->median_s > 0 && e->median_s < 1e6))
		return *why = "the median is not a positive number of seconds", -1;
	return 0;
}

int mb_peer_load(const char *path, struct mb_peer *p)
{
	char *line = NULL;
	const char *why = NULL;
	size_t lineno = 0, cap = 0;
	FILE *f;
	int err = 0;

	p->n = 0;
	if ((err = mb_file_open_read(path, "--peer", &f)))
		return err;
	/* whole lines of any length: a long line's rest is not read as a line of its own */
	while (!err && getline(&line, &cap, f) >= 0) {
		lineno++;
		line[strcspn(line, "\r\n")] = '\0';
		if (strncmp(line, "ns,", 3) || !strncmp(line, "ns,shape,", 9))
			continue;
		if (p->n == MB_PEER_MAX)
			err = mb_bad_input("--peer %s: more than %d Newton-Schulz lines", path,
					   MB_PEER_MAX);
		else if (parse(line, &p->ns[p->n], &why))
			err = mb_bad_input("--peer %s:%zu: %s", path, lineno, why);
		else
			p->n++;
	}
	free(line);
	fclose(f);
	return err;
}

double mb_peer_ns_seconds(const struct mb_peer *p, uint64_t rows, uint64_t cols,
			  enum mb_ns_method method, enum mb_precision precision)
{
	size_t i;

	for (i = 0; i < p->n; i++)
		if (p->ns[i].rows == rows && p->ns[i].cols == cols && p->ns[i].method == method &&
		    p->ns[i].precision == precision)
			return p->ns[i].median_s;
	return NAN;
}

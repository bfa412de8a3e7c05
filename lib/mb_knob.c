/*
 * mb_knob: the table of the step's knobs (see mb_knob.h).
 */
#include "mb_knob.h"

#include <string.h>

#define ROW_(id, field, option, words, dflt, since, kind, help) \
	{ #field, option, words, dflt, help, since },
const struct mb_knob_info mb_knobs[MB_KNOBS_ROOM] = { MB_STEP_KNOBS(ROW_){ NULL } };
#undef ROW_

int mb_knob_word(size_t k, const char *word)
{
	const char *w = mb_knobs[k].words;
	size_t len = strlen(word);
	int i = 0;

	for (;;) {
		const char *end = strchr(w, '|');
		size_t n = end ? (size_t)(end - w) : strlen(w);

		if (n == len && !strncmp(w, word, len))
			return i;
		if (!end)
			return -1;
		w = end + 1;
		i++;
	}
}

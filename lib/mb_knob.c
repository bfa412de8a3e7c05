/*
 * mb_knob: the table of the step's knobs (see mb_knob.h).
 */
#include "mb_knob.h"

#include <stdio.h>
#include <string.h>

#define ROW_(id, field, option, words, autow, dflt, since, help) \
	{ #field, option, words, dflt, help, MB_KNOB_STAGE_WORDS(autow), since },
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

const char *mb_knob_name(size_t k, unsigned i, char *buf, size_t len)
{
	const char *w = mb_knobs[k].words;

	for (; i && w; i--)
		w = strchr(w, '|') ? strchr(w, '|') + 1 : NULL;
	snprintf(buf, len, "%.*s", w ? (int)strcspn(w, "|") : 1, w ? w : "?");
	return buf;
}

int mb_knob_word_at(size_t k, const char *word, unsigned stage)
{
	const char *const *by_stage = mb_knobs[k].stage_word;

	if (by_stage[0] && !strcmp(word, "auto"))
		word = stage >= 1 && stage <= 3 ? by_stage[stage - 1] : "";
	return mb_knob_word(k, word);
}

bool mb_knob_is_auto(size_t k, const char *word, unsigned stage)
{
	const char *const *by_stage = mb_knobs[k].stage_word;

	return by_stage[0] && stage >= 1 && stage <= 3 && !strcmp(word, by_stage[stage - 1]);
}

/* Append TEXT to BUF (LEN bytes, *N used), cut where it is full. */
static void append(char *buf, size_t len, size_t *n, const char *text)
{
	size_t m = strlen(text);

	if (m > len - *n - 1)
		m = len - *n - 1;
	memcpy(buf + *n, text, m);
	*n += m;
	buf[*n] = '\0';
}

const char *mb_knob_auto_text(size_t k, char *buf, size_t len)
{
	const char *const *w = mb_knobs[k].stage_word;
	char part[64];
	size_t n = 0;
	unsigned s, t;

	if (!len)
		return buf;
	buf[0] = '\0';
	/* each word once, with the stages that take it: "fp32 for ZeRO-1/2" */
	for (s = 0; s < 3 && w[0]; s++) {
		for (t = 0; t < s && strcmp(w[t], w[s]); t++)
			;
		if (t < s)
			continue;
		snprintf(part, sizeof(part), "%s%s for ZeRO-%u", s ? ", " : "", w[s], s + 1);
		append(buf, len, &n, part);
		for (t = s + 1; t < 3; t++)
			if (!strcmp(w[t], w[s]))
				snprintf(part, sizeof(part), "/%u", t + 1),
					append(buf, len, &n, part);
	}
	append(buf, len, &n, " (auto)");
	return buf;
}

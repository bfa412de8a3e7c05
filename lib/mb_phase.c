/*
 * mb_phase: the table of phases (see mb_phase.h), made from its rows.
 */
#include "mb_phase.h"

#include <stddef.h>

#define ROW_(e, field, name, clock, apply, span, what) \
	{ name, #field, MB_PHASE_CLOCK_##clock, apply, span, what },

const struct mb_phase_info mb_phases[MB_NPHASES] = { MB_PHASES(ROW_) };

/*
 * mb_phase: the table of phases (see mb_phase.h), made from its rows.
 */
#include "mb_phase.h"

#define ROW_(e, field, name, clock, what) { name, #field, clock, what },

const struct mb_phase_info mb_phases[MB_NPHASES] = { MB_PHASES(ROW_) };

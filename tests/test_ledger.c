/*
 * The ledger's books on the default device: a phase's peak is what is in
 * use when it is entered, before any allocation of its own; a CLBlast
 * temporary raises the overall peak (and its largest buffers) but not the
 * "own" peak.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "device.h"
#include "mb_ledger.h"

#define MIB (1ull << 20)

static cl_mem alloc(struct mb_ledger *l, uint64_t bytes, const char *tag)
{
	cl_mem m;

	assert_int_equal(mb_ledger_alloc(l, bytes, tag, &m), 0);
	assert_non_null(m);
	return m;
}

/* Entering a phase raises its peak to what is in use, before it allocates anything. */
static void phase_peak_from_its_start(void **state)
{
	struct mb_ledger l;
	cl_mem params, tmp;

	(void)state;
	mb_ledger_init(&l, &cl, 0);
	params = alloc(&l, 2 * MIB, "params.bf16"); /* before any phase */
	mb_ledger_phase(&l, "forward");
	assert_int_equal(mb_ledger_phase_peak(&l, "forward"), 2 * MIB);
	assert_int_equal(mb_ledger_phase_own_peak(&l, "forward"), 2 * MIB);
	tmp = alloc(&l, MIB, "clblast.fwd");
	assert_int_equal(mb_ledger_phase_peak(&l, "forward"), 3 * MIB);
	assert_int_equal(mb_ledger_phase_own_peak(&l, "forward"), 2 * MIB);
	mb_ledger_free(&l, tmp);
	/* a phase entered with nothing allocated in it: its peak is what it holds */
	mb_ledger_phase(&l, "step");
	assert_int_equal(mb_ledger_phase_peak(&l, "step"), 2 * MIB);
	assert_int_equal(mb_ledger_phase_own_peak(&l, "step"), 2 * MIB);
	assert_int_equal(mb_ledger_phase_peak(&l, "forward"), 3 * MIB);
	assert_int_equal(mb_ledger_phase_peak(&l, "backward"), 0);
	mb_ledger_free(&l, params);
	mb_ledger_release(&l);
}

/* A CLBlast temporary that sets a new peak: the overall peak and its buffers, not the own. */
static void clblast_sets_the_overall_peak(void **state)
{
	struct mb_ledger l;
	cl_mem ws, tmp;

	(void)state;
	mb_ledger_init(&l, &cl, 0);
	mb_ledger_phase(&l, "step");
	ws = alloc(&l, MIB, "ns.workspace");
	assert_int_equal(l.peak_bytes, MIB);
	assert_int_equal(l.own_peak_bytes, MIB);
	tmp = alloc(&l, 3 * MIB, "clblast.ns");
	assert_int_equal(l.peak_bytes, 4 * MIB);
	assert_int_equal(l.own_peak_bytes, MIB);
	assert_int_equal(l.ntop, 2);
	assert_string_equal(l.top[0].tag, "clblast.ns");
	assert_int_equal(l.top[0].bytes, 3 * MIB);
	assert_string_equal(l.top[1].tag, "ns.workspace");
	assert_int_equal(mb_ledger_phase_peak(&l, "step"), 4 * MIB);
	assert_int_equal(mb_ledger_phase_own_peak(&l, "step"), MIB);
	mb_ledger_free(&l, tmp);
	mb_ledger_free(&l, ws);
	/* alone, after the rest is gone: still a new peak */
	tmp = alloc(&l, 5 * MIB, "clblast.ns");
	assert_int_equal(l.peak_bytes, 5 * MIB);
	assert_int_equal(l.own_peak_bytes, MIB);
	assert_int_equal(l.ntop, 1);
	assert_string_equal(l.top[0].tag, "clblast.ns");
	mb_ledger_free(&l, tmp);
	assert_int_equal(l.current_bytes, 0);
	assert_int_equal(l.own_current_bytes, 0);
	mb_ledger_release(&l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(phase_peak_from_its_start),
		cmocka_unit_test(clblast_sets_the_overall_peak),
	};

	return cmocka_run_group_tests(tests, open_device, close_device);
}

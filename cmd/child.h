/*
 * child: this very program run again in a child process, for what could
 * crash or hang it: CLBlast kernels whose parameters were never checked on
 * this device (tune's candidates, a tuning that --tuning auto took from
 * another device of the same family).
 */
#ifndef MB_CHILD_H
#define MB_CHILD_H

#include <signal.h>
#include <stdbool.h>

#include "mb_cl.h"
#include "mb_tuning.h"

/*
 * Shapes that ns --verify checks a tuning on: odd sizes, so that CLBlast
 * pads, below and above the indirect GEMM's usual switching point (256),
 * so that a whole tuning's direct and indirect kernels both run.
 */
#define MB_CHILD_VERIFY_SHAPES "100x260,128x384,300x620"

/*
 * Whether this program can run its own file again (/proc/self/exe): not
 * under valgrind, where that is valgrind's tool, which refuses to run.
 */
bool mb_child_possible(void);

/*
 * Run ARGV in DIR, its stdout to DIR/OUT_NAME (or with its stderr, when
 * OUT_NAME is NULL) and its stderr to DIR/log.txt, until it ends, DEADLINE_S
 * (mb_now_s) passes or *STOP (if given) becomes non-zero: then it is killed.
 * Returns its exit status, 124 when killed, -1 when it could not start.
 */
int mb_child_run(const char *dir, char *const *argv, double deadline_s, const char *out_name,
		 volatile sig_atomic_t *stop);

/*
 * `muonbench ns --format csv --tuning DIR/tuning.json` (T, saved there) on
 * device D, in DIR, stdout to DIR/ns.csv: with VERIFY, one check against
 * float64 on MB_CHILD_VERIFY_SHAPES; else three timed reps on SHAPES. Its
 * exit status, as mb_child_run gives it (-1 also when T cannot be saved).
 */
int mb_child_ns(const char *dir, const struct mb_tuning *t, const struct mb_cl_device_info *d,
		const char *shapes, bool verify, double deadline_s, volatile sig_atomic_t *stop);

/* Remove what mb_child_ns wrote in DIR, and DIR. */
void mb_child_remove(const char *dir);

#endif

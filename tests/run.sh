#!/bin/sh
# Run every test binary given, the command-line tests and the docs test; print one summary.
# Usage: tests/run.sh BUILD/muonbench BUILD/tests/test_* ...
set -u
# every step the tests run is race-checked (lib/mb_race), unless the caller says 0
MUONBENCH_RACE_CHECK=${MUONBENCH_RACE_CHECK-1}
export MUONBENCH_RACE_CHECK
bin=$1
shift
failed=""
for t in "$@"; do
	"$t" || failed="$failed $(basename "$t")"
done
tests/cli.sh "$bin" || failed="$failed cli.sh"
tests/commands.sh "$bin" || failed="$failed commands.sh"
tests/advise.sh "$bin" || failed="$failed advise.sh"
tests/tuning.sh "$bin" || failed="$failed tuning.sh"
tests/ns_precision.sh "$bin" || failed="$failed ns_precision.sh"
tests/docs.sh "$bin" || failed="$failed docs.sh"
if [ -n "${NVML_STUB:-}" ]; then
	tests/nvml.sh "$bin" "$NVML_STUB" || failed="$failed nvml.sh"
fi
if [ -n "${SHIM:-}" ]; then
	tests/faults.sh "$bin" "$SHIM" || failed="$failed faults.sh"
	tests/mpi.sh "$bin" "$SHIM" "${MPI_FOUND:-}" || failed="$failed mpi.sh"
fi
if [ -n "${VARIANT_BIN:-}" ]; then
	tests/variant_row.sh "$VARIANT_BIN" || failed="$failed variant_row.sh"
fi
if [ -n "${BASELINE:-}" ]; then
	# shellcheck disable=SC2086 # the arguments are a list
	tests/baseline.sh "$bin" "$BASELINE" $BASELINE_ARGS || failed="$failed baseline.sh"
fi
echo
if [ -n "$failed" ]; then
	echo "TESTS FAILED:$failed"
	exit 1
fi
echo "all tests passed ($# unit test programs, cli.sh, commands.sh, advise.sh, tuning.sh, ns_precision.sh, docs.sh${NVML_STUB:+, nvml.sh}${SHIM:+, faults.sh, mpi.sh}${VARIANT_BIN:+, variant_row.sh}${BASELINE:+ and baseline.sh})"

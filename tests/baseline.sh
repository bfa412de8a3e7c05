#!/bin/sh
# Rerun the baseline's cells and compare against the committed baseline:
# the exact figures (parameter counts, the plan, peak device memory, the
# checksum) must match exactly; timings are compared as ratios to master of
# the same run, with a band wide enough for a shared 2-core machine (50%),
# so that a broken variant is caught and a busy machine is not.
# Usage: tests/baseline.sh BIN BASELINE.csv RUN-ARGS...
set -u
bin=$1
baseline=$2
shift 2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

if [ ! -f "$baseline" ]; then
	echo "baseline.sh: no '$baseline'; write it with 'make baseline'"
	exit 1
fi
echo "baseline.sh: rerunning the cells of $baseline"
if ! "$bin" run "$@" --out "$tmp/new.csv" >"$tmp/out" 2>"$tmp/err"; then
	cat "$tmp/out" "$tmp/err"
	exit 1
fi
# another CPU's PoCL device has another name: the exact figures still count
"$bin" compare --ratios --threshold 50 --exact --allow-device-change "$baseline" "$tmp/new.csv"

#!/bin/sh
# Run muonbench once for each group of `run` options, the groups separated by
# a lone --and, every group's rows into one results file: the cells that one
# invocation cannot hold (another --zero3-apply) in one file, as the baseline
# needs them. The options are words without spaces (the Makefile's).
# Usage: scripts/run-groups.sh BIN OUT ARGS...   (stdout and stderr are run's)
set -u
bin=$1
out=$2
shift 2
group=
for arg in "$@" --and; do
	if [ "$arg" != --and ]; then
		group="$group $arg"
		continue
	fi
	[ -n "$group" ] || continue
	# shellcheck disable=SC2086 # a list of words
	"$bin" run $group --out "$out" || exit $?
	group=
done

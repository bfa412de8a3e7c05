#!/bin/sh
# Does this machine itself run at one speed? With muonbench out of the
# picture: a fixed arithmetic loop (about 50 ms), timed SAMPLES times on each
# CPU in turn (taskset), then on all CPUs at once. Prints each CPU's times,
# the slowest over the fastest and their CV. A VM whose host is shared shows levels
# here that no benchmark on it can remove: a cell measured while its CPU sat
# at the slow level is that much slower, whatever muonbench does. Read a
# compare of two runs on such a machine against this ratio, and a CV within a
# run (tests/stability.sh prints this check's last lines before and after its
# invocations) against the CV of the loop's own times.
#
# Usage: bench/cpu-levels.sh   (SAMPLES=40; needs cc and taskset)
set -eu
samples=${SAMPLES:-40}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat >"$tmp/loop.c" <<'C'
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec * 1e-9;
}
int main(int argc, char **argv)
{
	static float a[1 << 16];
	int n = argc > 1 ? atoi(argv[1]) : 40, r, k, i;
	for (r = 0; r < n; r++) {
		double t = now();
		for (k = 0; k < 6000; k++)
			for (i = 0; i < (1 << 16); i++)
				a[i] = a[i] * 0.999f + 1.0f;
		printf("%.4f\n", now() - t);
	}
	return a[5] < 0; /* keeps the loop */
}
C
cc -O2 -o "$tmp/loop" "$tmp/loop.c"
summary() { # FILE LABEL
	sort -n "$1" | awk -v label="$2" '{ v[NR] = $1; s += $1; q += $1 * $1 } END {
		m = s / NR; sd = NR > 1 ? sqrt((q - NR * m * m) / (NR - 1)) : 0
		printf "%s: fastest %.4f s, median %.4f s, slowest %.4f s: slowest / fastest %.2f, CV %.1f%%\n",
			label, v[1], v[int((NR + 1) / 2)], v[NR], v[NR] / v[1], 100 * sd / m }'
}
ncpu=$(getconf _NPROCESSORS_ONLN)
cpu=0
while [ "$cpu" -lt "$ncpu" ]; do
	taskset -c "$cpu" "$tmp/loop" "$samples" >"$tmp/cpu$cpu"
	echo "cpu $cpu alone: $(tr '\n' ' ' <"$tmp/cpu$cpu")"
	summary "$tmp/cpu$cpu" "cpu $cpu alone"
	cpu=$((cpu + 1))
done
cpu=0
while [ "$cpu" -lt "$ncpu" ]; do
	taskset -c "$cpu" "$tmp/loop" "$samples" >"$tmp/all$cpu" &
	cpu=$((cpu + 1))
done
wait
cat "$tmp"/all* >"$tmp/all"
summary "$tmp/all" "all $ncpu CPUs at once"
echo "load average meanwhile: $(cut -d' ' -f1-3 /proc/loadavg)"

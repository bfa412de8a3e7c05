#!/bin/sh
# What the race checker (lib/mb_race, MUONBENCH_RACE_CHECK=1) costs:
#  - predict of the whole Qwen3-4B at ZeRO-2 and ZeRO-3, every variant: the
#    model engine's wall time with the checker and without (the checker is
#    most of the work there, so this is its cost per operation at scale);
#  - run on the device (PoCL on a CPU, or a GPU): PAIRS pairs of the same run
#    with and without, alternating so that the machine's drift falls on both
#    alike; each side's median iteration and apply, and their ratios (the
#    checker runs on the host between enqueues, so on a device it must hide
#    behind the device's work).
# Usage: bench/race-cost.sh [muonbench] [run options...]
#   (PAIRS=5; default options: tiny, 1 layer, ZeRO-2 and 3, master and both, 3 runs of 5 steps)
set -eu
bin=${1:-build/muonbench}
[ $# -gt 0 ] && shift
opts=${*:-"--model tiny --layers 1 --gather-budget 2Mi --fwd-bwd off --profile off --stage 2,3 --variant master,both --runs 3 --steps 5 --measure 2-5"}
pairs=${PAIRS:-5}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# seconds of wall time that "$@" takes
wall() {
	python3 -c 'import subprocess, sys, time
t = time.perf_counter()
subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL)
print(f"{time.perf_counter() - t:.3f}")' "$@"
}

off=$(MUONBENCH_RACE_CHECK=0 wall "$bin" predict --profile reference --model qwen3-4b --stage 2,3 --variant all)
on=$(MUONBENCH_RACE_CHECK=1 wall "$bin" predict --profile reference --model qwen3-4b --stage 2,3 --variant all)
echo "predict, Qwen3-4B, ZeRO-2 and 3, every variant: ${off} s without the checker, ${on} s with it"

i=0
while [ $i -lt "$pairs" ]; do
	# shellcheck disable=SC2086 # $opts is a list of options
	MUONBENCH_RACE_CHECK=1 "$bin" run $opts --quiet --out "$tmp/on-$i.csv" >/dev/null 2>&1
	# shellcheck disable=SC2086
	MUONBENCH_RACE_CHECK=0 "$bin" run $opts --quiet --out "$tmp/off-$i.csv" >/dev/null 2>&1
	i=$((i + 1))
done
python3 - "$tmp" <<'EOF'
import csv, glob, statistics, sys
def med(side, col):
    v = [float(r[col]) for f in glob.glob(f"{sys.argv[1]}/{side}-*.csv")
         for r in csv.DictReader(open(f)) if r["status"] == "ok"]
    return statistics.median(v)
for col, name in (("iter_mean_s", "iteration"), ("apply_mean_s", "apply")):
    on, off = med("on", col), med("off", col)
    print(f"run, {name}: median {off:.4g} s without the checker, {on:.4g} s with it ({on / off:.3f}x)")
EOF

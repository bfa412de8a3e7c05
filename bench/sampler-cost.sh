#!/bin/sh
# What the device-memory sampler (mb_devmem: a thread that reads the driver's
# used memory every 5 ms) costs a run: PAIRS pairs of the same run, one with
# the sampler and one without (MUONBENCH_DEVICE_MEMORY=off), alternating so
# that the machine's drift falls on both alike; prints each side's median
# apply and iteration time and their ratios. It must be within noise.
#
# On a GPU (NVML present) it times the real NVML calls; elsewhere it takes
# the tests' stand-in NVML (build/tests/nvml, `make test` builds it), which
# times the thread and its wake-ups but not a driver's call.
#
# Usage: bench/sampler-cost.sh [muonbench] [run options...]
#   (PAIRS=10; default options: the micro model, ZeRO-2 master and both, 3 runs of 5 steps)
set -eu
bin=${1:-build/muonbench}
[ $# -gt 0 ] && shift
opts=${*:-"--config tests/data/good/micro.json --gather-budget 128Ki --fwd-bwd off --profile off --stage 2 --variant master,both --runs 3 --steps 5 --measure 2-5"}
pairs=${PAIRS:-10}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
stub=$(cd "$(dirname "$bin")" && pwd)/tests/nvml
if ! ldconfig -p | grep -q 'libnvidia-ml.so.1' && [ -e "$stub/libnvidia-ml.so.1" ]; then
	export LD_LIBRARY_PATH="$stub${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" MB_STUB_NVML_USED=1000000,2000000
	echo "no NVML here: the tests' stand-in ($stub)"
fi
i=0
while [ $i -lt "$pairs" ]; do
	# shellcheck disable=SC2086 # $opts is a list of options
	"$bin" run $opts --quiet --out "$tmp/on-$i.csv" >/dev/null 2>&1
	# shellcheck disable=SC2086
	MUONBENCH_DEVICE_MEMORY=off "$bin" run $opts --quiet --out "$tmp/off-$i.csv" >/dev/null 2>&1
	i=$((i + 1))
done
python3 - "$tmp" <<'P'
import csv, glob, statistics, sys
d = sys.argv[1]
def figures(side):
    rows = [r for f in sorted(glob.glob(f"{d}/{side}-*.csv")) for r in csv.DictReader(open(f))]
    src = {r["device_used_source"] for r in rows}
    return ([float(r["apply_mean_s"]) for r in rows if r["status"] == "ok"],
            [float(r["iter_mean_s"]) for r in rows if r["status"] == "ok"], src)
on_a, on_i, on_src = figures("on")
off_a, off_i, off_src = figures("off")
print(f"sampler on  (device_used_source {','.join(sorted(on_src))}): {len(on_a)} runs, apply median {statistics.median(on_a):.6g} s, iteration {statistics.median(on_i):.6g} s")
print(f"sampler off (device_used_source {','.join(sorted(off_src))}): {len(off_a)} runs, apply median {statistics.median(off_a):.6g} s, iteration {statistics.median(off_i):.6g} s")
print(f"on / off: apply {statistics.median(on_a) / statistics.median(off_a):.3f}, iteration {statistics.median(on_i) / statistics.median(off_i):.3f}")
P

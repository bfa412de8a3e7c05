#!/bin/sh
# The driver's own figure of the device's memory (mb_devmem), on PoCL with a
# stand-in NVML (tests/nvml_stub.c, as libnvidia-ml.so.1 in a folder of its
# own): its figures reach the results' device_used_* columns and report's
# table beside the ledger's; without it, or where it knows no such device,
# the columns are empty, never 0. Prints TAP.
# Usage: tests/nvml.sh path/to/muonbench path/to/stub/libnvidia-ml.so.1   (from the repository root)
set -u
bin=$1
stub_dir=$(cd "$(dirname "$2")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=0
failed=0
. tests/tap.sh

micro="--config tests/data/good/micro.json --gather-budget 128Ki --fwd-bwd off --stage 2 --variant master,both --runs 2 --steps 3 --profile off --quiet"
# used FILE: "source base peak" of each row, '-' for an empty field
used() {
	python3 -c 'import csv, sys
for r in csv.DictReader(open(sys.argv[1])):
    print(r["device_used_source"], r["device_used_base_bytes"] or "-", r["device_used_peak_bytes"] or "-")' "$1"
}

# (a machine with NVIDIA's own NVML answers for its GPU: there, with the figure left out)
off=
ldconfig -p 2>/dev/null | grep -q 'libnvidia-ml\.so\.1' && off=off
# shellcheck disable=SC2086 # $micro is a list of options
MUONBENCH_DEVICE_MEMORY=$off "$bin" run $micro --out "$tmp/none.csv" >"$tmp/out" 2>"$tmp/err"
if [ $? -eq 0 ] && [ "$(used "$tmp/none.csv" | sort -u)" = "none - -" ] &&
	! grep -q "driver's own figure" "$tmp/out"; then
	report ok "nvml: without NVML the columns are empty, and report has no driver's table"
else
	report fail "nvml: without NVML the columns are empty, and report has no driver's table" "$(used "$tmp/none.csv"; cat "$tmp/err")"
fi

# shellcheck disable=SC2086
LD_LIBRARY_PATH=$stub_dir MB_STUB_NVML_USED=1000000,1000000,1000000,1000000,5000000 "$bin" run $micro --out "$tmp/nvml.csv" >"$tmp/out" 2>"$tmp/err"
rc=$?
if [ $rc -eq 0 ] && [ "$(used "$tmp/nvml.csv" | head -1)" = "nvml 1000000 5000000" ] &&
	[ "$(used "$tmp/nvml.csv" | sed 1d | sort -u)" = "nvml 5000000 5000000" ]; then
	report ok "nvml: the stand-in's base and peak are the run's device_used_* columns"
else
	report fail "nvml: the stand-in's base and peak are the run's device_used_* columns" "exit $rc: $(used "$tmp/nvml.csv"; cat "$tmp/err")"
fi
# (the ledger's peak holds CLBlast's temporaries, which differ by device: not compared)
if grep "^| 2 | master | " "$tmp/out" | grep -qF "| 4.77 MiB | 977 KiB | 3.81 MiB |" &&
	grep -qF "against the driver's own figure (nvml;" "$tmp/out"; then
	report ok "nvml: run's report puts the driver's peak beside the ledger's"
else
	report fail "nvml: run's report puts the driver's peak beside the ledger's" "$(cat "$tmp/out")"
fi
"$bin" report "$tmp/nvml.csv" >"$tmp/out" 2>"$tmp/err"
if grep "^| 2 | both | " "$tmp/out" | grep -qF "| 4.77 MiB | 4.77 MiB | 0 B |"; then
	report ok "nvml: report reads the columns back"
else
	report fail "nvml: report reads the columns back" "$(cat "$tmp/out" "$tmp/err")"
fi

# a stand-in that knows another PCI address: no figure, as on a device NVML does not manage
# shellcheck disable=SC2086
LD_LIBRARY_PATH=$stub_dir MB_STUB_NVML_USED=1000000,5000000 MB_STUB_NVML_PCI=0000:99:00.0 \
	"$bin" run $micro --out "$tmp/other.csv" >/dev/null 2>"$tmp/err"
if [ "$(used "$tmp/other.csv" | sort -u)" = "none - -" ]; then
	report ok "nvml: NVML that knows no device at this PCI address gives no figure"
else
	report fail "nvml: NVML that knows no device at this PCI address gives no figure" "$(used "$tmp/other.csv"; cat "$tmp/err")"
fi

# Whether pinned host memory takes device memory too: measured with a 64 MiB pinned buffer
# where the driver gives its figure (the stand-in's third reading is the second's plus
# 64 MiB: yes; the same: no), else unknown; --pinned-device-copy states it.
copy() {
	python3 -c 'import csv, sys
for r in csv.DictReader(open(sys.argv[1])):
    print(r["pinned_device_copy"], r["pinned_device_copy_bytes"] or "-", r["pinned_host_bytes"])' "$1" | sort -u
}
# shellcheck disable=SC2086
LD_LIBRARY_PATH=$stub_dir MB_STUB_NVML_USED=1000000,1000000,68108864 "$bin" run $micro --out "$tmp/yes.csv" >/dev/null 2>"$tmp/err"
yes=$(copy "$tmp/yes.csv")
# shellcheck disable=SC2086
"$bin" run $micro --pinned-device-copy yes --out "$tmp/said.csv" >/dev/null 2>>"$tmp/err"
if [ "$(copy "$tmp/nvml.csv" | cut -d' ' -f1,2 | sort -u)" = "no 0" ] &&
	[ "$(copy "$tmp/none.csv" | cut -d' ' -f1,2 | sort -u)" = "unknown -" ] &&
	[ -n "$yes" ] && echo "$yes" | awk '$1 != "yes" || $2 != $3 { exit 1 }' &&
	[ "$(copy "$tmp/said.csv" | cut -d' ' -f1 | sort -u)" = yes ]; then
	report ok "nvml: pinned memory's device copy measured (yes, no), unknown without a figure, or as stated"
else
	report fail "nvml: pinned memory's device copy measured (yes, no), unknown without a figure, or as stated" "nvml: $(copy "$tmp/nvml.csv"); none: $(copy "$tmp/none.csv"); yes: $yes; said: $(copy "$tmp/said.csv"); $(cat "$tmp/err")"
fi
# the fit check counts the copy beside the peak: a limit between the peak and the peak with
# the copy refuses the cell with the copy and takes it without
one="--config tests/data/good/micro.json --gather-budget 128Ki --fwd-bwd off --profile off --stage 2 --variant master --runs 1 --steps 2 --quiet"
limit=$(python3 -c 'import csv, sys
r = list(csv.DictReader(open(sys.argv[1])))[0]
print(int(r["peak_device_bytes"]) + int(r["pinned_host_bytes"]) // 2)' "$tmp/none.csv")
# shellcheck disable=SC2086
"$bin" run $one --device-mem-limit "$limit" --pinned-device-copy yes --out "$tmp/fit-yes.csv" >/dev/null 2>"$tmp/err"
rc_yes=$?
# shellcheck disable=SC2086
"$bin" run $one --device-mem-limit "$limit" --pinned-device-copy no --out "$tmp/fit-no.csv" >/dev/null 2>>"$tmp/err"
rc_no=$?
if [ $rc_yes -eq 1 ] && [ $rc_no -eq 0 ] &&
	grep -q "does not fit: the device peak .* with the driver's copy of the pinned host memory .*would fit: .*--pin-memory off" "$tmp/fit-yes.csv"; then
	report ok "nvml: the fit check counts pinned memory's device copy, and says what fits"
else
	report fail "nvml: the fit check counts pinned memory's device copy, and says what fits" "exit $rc_yes/$rc_no: $(cat "$tmp/err")"
fi
"$bin" plan --config tests/data/good/micro.json --pinned-device-copy yes >"$tmp/out" 2>&1
if grep -q "^With --pinned-device-copy yes the device also holds a copy of the pinned memory" "$tmp/out" &&
	! "$bin" plan --config tests/data/good/micro.json | grep -q "pinned-device-copy"; then
	report ok "nvml: plan shows pinned memory's device copy when told yes"
else
	report fail "nvml: plan shows pinned memory's device copy when told yes" "$(tail -5 "$tmp/out")"
fi

# results of format 11 (before the columns) are still read, the figures unknown
if "$bin" report results/baseline-tiny.csv >"$tmp/out" 2>"$tmp/err" && ! grep -q "driver's own figure" "$tmp/out"; then
	report ok "nvml: a format 11 file is read, without the driver's table"
else
	report fail "nvml: a format 11 file is read, without the driver's table" "$(cat "$tmp/err")"
fi

echo "1..$n"
[ "$failed" -eq 0 ]

#!/bin/sh
# run --ns-precision: Newton-Schulz's GEMMs at 16 bits in the offload step
# (our kernel, kernels/ns_gemm.cl), every variant still bitwise identical to
# every other at the same precision, the rows saying which precision and
# kernel ran; auto is fp32 on a device without the tensor-core path (PoCL),
# with fp32's checksums. Prints TAP.
# Usage: tests/ns_precision.sh path/to/muonbench   (from the repository root)
set -u
bin=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=0
failed=0
. tests/tap.sh

micro="--config tests/data/good/micro.json --gather-budget 128Ki --fwd-bwd off --profile off --stage 2,3 --variant all --runs 1 --steps 2 --quiet"
# precision FILE: "stage status ns_precision ns_kernel checksum", one line per distinct row
rows() {
	python3 -c 'import csv, sys
for r in csv.DictReader(open(sys.argv[1])):
    print(r["momentum_dtype"], r["status"], r["ns_precision"], r["ns_kernel"], r["checksum"])' "$1" | sort -u
}

for p in fp32 bf16 fp16 auto; do
	# shellcheck disable=SC2086 # $micro is a list of options
	"$bin" run $micro --ns-precision $p --out "$tmp/$p.csv" >"$tmp/$p.out" 2>"$tmp/$p.err" || echo "exit $?" >>"$tmp/$p.err"
done
want_kernel() { [ "$1" = fp32 ] && echo clblast-sgemm || echo ns_gemm-portable; }
for p in fp32 bf16 fp16; do
	# one row shape per momentum dtype (fp32 for ZeRO-2, bf16 for ZeRO-3): every variant alike
	if [ "$(rows "$tmp/$p.csv" | wc -l)" -eq 2 ] && ! rows "$tmp/$p.csv" | grep -v " ok $p $(want_kernel $p) " &&
		grep -q "^Newton-Schulz's GEMMs: $p, on $(want_kernel $p)\.$" "$tmp/$p.out" &&
		[ "$(grep -c "bitwise identical over 5 runs" "$tmp/$p.out")" -eq 2 ]; then
		report ok "ns_precision: run --ns-precision $p, ten cells bitwise identical per momentum, rows say $p"
	else
		report fail "ns_precision: run --ns-precision $p, ten cells bitwise identical per momentum, rows say $p" "$(rows "$tmp/$p.csv"; cat "$tmp/$p.err")"
	fi
done
# the 16-bit GEMMs change the math: each precision its own final state
sums() { rows "$1" | awk '{print $5}' | sort | tr '\n' ' '; }
if [ "$(sums "$tmp/fp32.csv")" != "$(sums "$tmp/bf16.csv")" ] && [ "$(sums "$tmp/bf16.csv")" != "$(sums "$tmp/fp16.csv")" ]; then
	report ok "ns_precision: fp32, bf16 and fp16 end in three different states"
else
	report fail "ns_precision: fp32, bf16 and fp16 end in three different states" "$(sums "$tmp/fp32.csv") / $(sums "$tmp/bf16.csv") / $(sums "$tmp/fp16.csv")"
fi
# auto is the precision it resolves to on this device (fp32 on PoCL, where the tensor-core
# path is not), with that precision's final state
auto=$(rows "$tmp/auto.csv" | awk '{print $3}' | sort -u)
if [ -f "$tmp/$auto.csv" ] && [ "$(rows "$tmp/auto.csv")" = "$(rows "$tmp/$auto.csv")" ] &&
	{ [ "$auto" = fp32 ] || "$bin" devices 2>/dev/null | grep -q "sm_[89][0-9]\|sm_1[0-9][0-9]"; }; then
	report ok "ns_precision: auto on this device is $auto, with $auto's final state"
else
	report fail "ns_precision: auto on this device is one precision, with its final state" "$(rows "$tmp/auto.csv")"
fi
# ns times a precision once, however it is named: auto,fp32 is one precision where auto is fp32
nrows=$("$bin" ns --shape 64x128 --ns-precision "auto,fp32" --reps 1 --format csv 2>/dev/null | sed 1d | wc -l)
if { [ "$auto" = fp32 ] && [ "$nrows" -eq 2 ]; } || { [ "$auto" != fp32 ] && [ "$nrows" -eq 4 ]; }; then
	report ok "ns_precision: ns --ns-precision auto,fp32 times each precision once ($nrows rows)"
else
	report fail "ns_precision: ns --ns-precision auto,fp32 times each precision once" "$nrows rows, auto $auto"
fi
expect_error "ns_precision: run takes one precision" 2 "--ns-precision 'fp16,bf16': one precision here" \
	run --config tests/data/good/micro.json --ns-precision fp16,bf16 --out "$tmp/never.csv"
expect_error "ns_precision: a bad precision is named" 2 "--ns-precision: invalid value 'fp8'" \
	run --config tests/data/good/micro.json --ns-precision fp8 --out "$tmp/never.csv"
# report keeps precisions apart and says which
"$bin" report "$tmp/fp32.csv" "$tmp/bf16.csv" >"$tmp/report" 2>&1
if grep -q "Newton-Schulz gram in fp32;" "$tmp/report" && grep -q "Newton-Schulz gram in bf16;" "$tmp/report"; then
	report ok "ns_precision: report tables each precision apart and names it"
else
	report fail "ns_precision: report tables each precision apart and names it" "$(head -5 "$tmp/report")"
fi

# calibrated mode: the spin in Newton-Schulz's place, every variant alike, the rows say so
# shellcheck disable=SC2086
"$bin" run $micro --ns-rate 20 --out "$tmp/cal.csv" >"$tmp/cal.out" 2>"$tmp/cal.err"
rc=$?
cal=$(python3 -c 'import csv, sys
for r in csv.DictReader(open(sys.argv[1])):
    print(r["momentum_dtype"], r["status"], r["ns_precision"], r["ns_kernel"], r["ns_rate_gflops"], r["checksum"])' "$tmp/cal.csv" | sort -u)
if [ $rc -eq 0 ] && [ "$(echo "$cal" | wc -l)" -eq 2 ] && ! echo "$cal" | grep -v " ok calibrated ns_spin 20 " &&
	grep -q "^Newton-Schulz calibrated: ns_spin at 20 GFLOP/s" "$tmp/cal.out" &&
	! echo "$cal" | grep -qF "$(rows "$tmp/fp32.csv" | head -1 | awk '{print $5}')"; then
	report ok "ns_precision: --ns-rate runs calibrated, ten cells alike per momentum, rows say so"
else
	report fail "ns_precision: --ns-rate runs calibrated, ten cells alike per momentum, rows say so" "exit $rc: $cal $(cat "$tmp/cal.err")"
fi
# compare says the knob a calibrated run differs in, "none" where the other has no rate
"$bin" compare "$tmp/fp32.csv" "$tmp/cal.csv" >"$tmp/cmp" 2>&1
if grep -q "ns_precision fp32 -> calibrated; ns_rate_gflops none -> 20" "$tmp/cmp"; then
	report ok "ns_precision: compare names the calibrated rate, none for a run without one"
else
	report fail "ns_precision: compare names the calibrated rate, none for a run without one" "$(head -5 "$tmp/cmp")"
fi
expect_error "ns_precision: --ns-rate with --ns-precision is refused" 2 "--ns-rate replaces Newton-Schulz" \
	run --config tests/data/good/micro.json --ns-rate 20 --ns-precision fp16 --out "$tmp/never.csv"

# CLBlast's temporary is held only where CLBlast runs Newton-Schulz's GEMMs (fp32): the tiny
# model's matrices are large enough for CLBlast's indirect GEMM, which takes one, on PoCL
temp() { python3 -c 'import csv, sys
print(sorted({r["clblast_temp_bytes"] for r in csv.DictReader(open(sys.argv[1]))}))' "$1"; }
tiny="--model tiny --layers 1 --gather-budget 2Mi --fwd-bwd off --profile off --stage 2 --variant master --runs 1 --steps 1 --measure 1-1 --quiet"
# shellcheck disable=SC2086
"$bin" run $tiny --ns-precision bf16 --out "$tmp/tiny-bf16.csv" >/dev/null 2>&1
# shellcheck disable=SC2086
"$bin" run $tiny --ns-rate 20 --out "$tmp/tiny-cal.csv" >/dev/null 2>&1
if [ "$(temp "$tmp/tiny-bf16.csv")" = "['0']" ] && [ "$(temp "$tmp/tiny-cal.csv")" = "['0']" ]; then
	report ok "ns_precision: no CLBlast temporary at 16 bits or calibrated"
else
	report fail "ns_precision: no CLBlast temporary at 16 bits or calibrated" "$(temp "$tmp/tiny-bf16.csv") $(temp "$tmp/tiny-cal.csv")"
fi
# plan says the precision asked, and checks it as run does
expect_output "ns_precision: plan names the precision" "Its GEMMs in fp16 (--ns-precision): the same FLOPs" \
	plan --model tiny --ns-precision fp16
expect_error "ns_precision: plan refuses a precision that is not one" 2 "--ns-precision: invalid value 'fp8'" \
	plan --model tiny --ns-precision fp8
# profile measures Newton-Schulz at the precision asked and says which; run predicts a cell
# only from a profile of its precision (calibrated: from the rate asked)
"$bin" profile --shape 128x256,256x768 --reps 1 --ns-precision bf16 --out "$tmp/bf16.json" >/dev/null 2>"$tmp/err"
if grep -q '"ns_gram_precision": "bf16"' "$tmp/bf16.json" && grep -q '"ns_standard_precision": "bf16"' "$tmp/bf16.json"; then
	report ok "ns_precision: profile --ns-precision bf16 records its ladders' precision"
else
	report fail "ns_precision: profile --ns-precision bf16 records its ladders' precision" "$(cat "$tmp/err")"
fi
one="--config tests/data/good/micro.json --gather-budget 128Ki --fwd-bwd off --stage 2 --variant master --runs 1 --steps 2 --quiet --profile $tmp/bf16.json"
predicted() { python3 -c 'import csv, sys
r = list(csv.DictReader(open(sys.argv[1])))[0]
print("yes" if r["pred_ns_s"] else "no")' "$1"; }
# shellcheck disable=SC2086 # $one is a list of options
"$bin" run $one --ns-precision fp32 --out "$tmp/u1.csv" >/dev/null 2>"$tmp/err1"
# shellcheck disable=SC2086
"$bin" run $one --ns-precision bf16 --out "$tmp/u2.csv" >/dev/null 2>"$tmp/err2"
# shellcheck disable=SC2086
"$bin" run $one --ns-rate 20 --out "$tmp/u3.csv" >/dev/null 2>"$tmp/err3"
if [ "$(predicted "$tmp/u1.csv")" = no ] &&
	grep -q "not predicted: the profile '.*' times Newton-Schulz at bf16, this run runs it at fp32" "$tmp/err1" &&
	[ "$(predicted "$tmp/u2.csv")" = yes ] && [ "$(predicted "$tmp/u3.csv")" = yes ]; then
	report ok "ns_precision: run predicts from a profile of its own precision, or from --ns-rate"
else
	report fail "ns_precision: run predicts from a profile of its own precision, or from --ns-rate" "$(cat "$tmp/err1" "$tmp/err2" "$tmp/err3")"
fi

echo "1..$n"
[ "$failed" -eq 0 ]

#!/bin/sh
# Adding a variant is one row of lib/mb_variant.h: a binary built with the
# test-only row (-DMB_TEST_VARIANT: "twin", pipeline with pageable momentum,
# a combination no other row has) runs it, ends in master's state, keeps the
# plan's peak, and report, compare and plot show it. Adding a phase is one
# row of lib/mb_phase.h: the same binary has the test-only phase row
# (-DMB_TEST_PHASE: "probe", an apply phase no command is timed as), and the
# results, report, predict and plot's bars of the apply have it. Adding a
# knob of the step is one row of lib/mb_knob.h and its use in lib/mb_sched.c:
# the same binary has the test-only knob row (-DMB_TEST_KNOB: --probe-wait,
# the host waits for each unit's compute before its writeback), an option of
# run and predict, a column of the results, and a knob compare matches on.
# Prints TAP.
# Usage: tests/variant_row.sh path/to/muonbench-with-the-row   (from the repository root)
set -u
bin=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=0
failed=0
. tests/tap.sh

micro="--config tests/data/good/micro.json --runs 2 --steps 3 --gather-budget 128Ki --fwd-bwd off --profile off"
expect_output "variant row: --help lists it" "master|pin|overlap|both|pipeline|twin" run --help
# shellcheck disable=SC2086 # $micro is a list of options
expect_output "variant row: it runs and ends in master's state" \
	"bitwise identical over 8 runs" run $micro --stage 2 --variant master,pin,pipeline,twin --out "$tmp/a.csv"
grep -qF "step-phase peak as predicted by the plan" "$tmp/out" &&
	report ok "variant row: its peak is the plan's" ||
	report fail "variant row: its peak is the plan's" "$(cat "$tmp/out")"
# pageable momentum like master's, the pipeline's peak (three batches alive)
if python3 -c 'import csv, sys
r = {x["variant"]: x for x in csv.DictReader(open(sys.argv[1]))}
t, p = r["twin"], r["pipeline"]
assert t["status"] == "ok" and t["momentum_pinned"] == "no", t
assert t["peak_step_bytes"] == p["peak_step_bytes"] > r["master"]["peak_step_bytes"], (t, p)
assert t["checksum"] == r["master"]["checksum"]' "$tmp/a.csv"; then
	report ok "variant row: a row of its own in the results, pageable, pipeline's peak"
else
	report fail "variant row: a row of its own in the results, pageable, pipeline's peak" "$(cut -d, -f1-3 "$tmp/a.csv")"
fi
expect_output "variant row: report shows it against master" "| 2 | twin | " report "$tmp/a.csv"
expect_output "variant row: compare matches it" "| 2 | twin | " compare "$tmp/a.csv" "$tmp/a.csv"
grep -qF "4 cells matched" "$tmp/out" &&
	report ok "variant row: compare counts it" ||
	report fail "variant row: compare counts it" "$(cat "$tmp/out")"
expect_output "variant row: predict models it" "| 2 | twin | " predict --profile reference --model qwen3-4b --stage 2
"$bin" plot "$tmp/a.csv" -o "$tmp/a.svg" >/dev/null 2>&1 && grep -q "twin" "$tmp/a.svg" &&
	report ok "variant row: plot draws it" ||
	report fail "variant row: plot draws it" "$(cat "$tmp/a.svg" 2>/dev/null | head -5)"
head -1 "$tmp/a.csv" | tr , '\n' | grep -qx probe_s && head -1 "$tmp/a.csv" | tr , '\n' | grep -qx pred_probe_s &&
	report ok "phase row: its columns in the results, measured and predicted" ||
	report fail "phase row: its columns in the results, measured and predicted" "$(head -1 "$tmp/a.csv")"
expect_output "phase row: report's time per phase shows it" "| host_opt | params_h2d | probe |" report "$tmp/a.csv"
expect_output "phase row: predict's phase table shows it" "| host_opt | params_h2d | probe |" predict --profile reference --model qwen3-4b --stage 2
grep -q "using 12 title 'probe'" "$tmp/a.gp" && head -1 "$tmp/a.dat" | grep -q " d2h_exposed probe$" &&
	report ok "phase row: plot stacks it with the apply's phases" ||
	report fail "phase row: plot stacks it with the apply's phases" "$(head -1 "$tmp/a.dat"; grep plot "$tmp/a.gp")"

expect_output "knob row: run's --help lists it" "--probe-wait off|on" run --help
expect_output "knob row: predict's --help lists it" "--probe-wait off|on" predict --help
expect_output "knob row: predict models it" "| 2 | both | " predict --profile reference --model qwen3-4b --stage 2 --probe-wait on
# shellcheck disable=SC2086 # $micro is a list of options
expect_output "knob row: it runs and ends in the same state" \
	"bitwise identical over 4 runs" run $micro --stage 2 --variant master,overlap --probe-wait on --out "$tmp/k.csv"
if python3 -c 'import csv, sys
a = {(x["variant"], x["run"]): x for x in csv.DictReader(open(sys.argv[1]))}
k = {(x["variant"], x["run"]): x for x in csv.DictReader(open(sys.argv[2]))}
assert all(x["probe_wait"] == "off" for x in a.values()), a
assert all(x["probe_wait"] == "on" and x["status"] == "ok" for x in k.values()), k
assert k[("master", "1")]["checksum"] == a[("master", "1")]["checksum"]' "$tmp/a.csv" "$tmp/k.csv"; then
	report ok "knob row: its column in the results, the same checksums"
else
	report fail "knob row: its column in the results, the same checksums" "$(head -2 "$tmp/k.csv")"
fi
"$bin" compare "$tmp/a.csv" "$tmp/k.csv" >"$tmp/out" 2>&1
grep -qF "differs in probe_wait off -> on" "$tmp/out" &&
	report ok "knob row: compare does not match cells across it, and names it" ||
	report fail "knob row: compare does not match cells across it, and names it" "$(cat "$tmp/out")"

echo "1..$n"
[ "$failed" -eq 0 ] || echo "# $failed of $n failed"
[ "$failed" -eq 0 ]

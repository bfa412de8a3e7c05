#!/bin/sh
# muonbench advise, in TAP: the table, the patch and --confirm on the CPU
# device with the tiny model; on the reference profile with Qwen3-4B, the
# reference change's finding (pin and overlap both; at ZeRO-3 a smaller
# sub-group lowers the step peak at no time cost) and its time (under 10 s
# with no device); the refusals (exit 2).
# Usage: tests/advise.sh path/to/muonbench
set -u
bin=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=0
failed=0
# shellcheck source=tests/tap.sh
. tests/tap.sh
ds=tests/data/ds
tiny="--model tiny --layers 1 --fwd-bwd off"

# column NAME of CSV row ROLE,RANK (the first such) in FILE
col() {
	awk -F, -v name="$1" -v role="$2" -v rank="$3" '
		NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
		$c["role"] == role && $c["rank"] == rank { print $c[name]; exit }' "$4"
}

# 1. The table and the patch, on the tiny model.
# shellcheck disable=SC2086 # $tiny is a list of options
if timeout -k 5 120 "$bin" advise --ds-config $ds/stage2.json $tiny --profile reference \
	--out "$tmp/patch.json" >"$tmp/out" 2>"$tmp/err" &&
	grep -q '^| baseline | master | off |' "$tmp/out" && grep -q '^| 1 | ' "$tmp/out" &&
	grep -q 'written to' "$tmp/out"; then
	report ok "advise: the baseline (the config's pin_memory off) and the best points"
else
	report fail "advise: the baseline (the config's pin_memory off) and the best points" \
		"$(cat "$tmp/out" "$tmp/err")"
fi
if python3 -c 'import json, sys; p = json.load(open(sys.argv[1])); z = p["zero_optimization"]; assert z["offload_optimizer"] == {"device": "cpu", "pin_memory": True} and z["stage"] == 2' "$tmp/patch.json" 2>"$tmp/err"; then
	report ok "advise: the patch is a JSON object in DeepSpeed's keys (pin_memory on)"
else
	report fail "advise: the patch is a JSON object in DeepSpeed's keys (pin_memory on)" \
		"$(cat "$tmp/patch.json" "$tmp/err")"
fi
# shellcheck disable=SC2086
"$bin" advise --ds-config "$tmp/patch.json" $tiny --profile reference --format csv \
	>"$tmp/back.csv" 2>"$tmp/err"
# shellcheck disable=SC2086
"$bin" advise --ds-config $ds/stage2.json $tiny --profile reference --format csv \
	>"$tmp/first.csv" 2>>"$tmp/err"
master_on=$(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
	$c["variant"] == "master" && $c["pin_memory"] == "on" { print $c["pred_iter_s"]; exit }' "$tmp/first.csv")
if [ "$(col pin_memory baseline 0 "$tmp/back.csv")" = on ] &&
	[ "$(col stage baseline 0 "$tmp/back.csv")" = 2 ] &&
	[ "$(col pin_memory advised 1 "$tmp/first.csv")" = on ] &&
	[ -n "$master_on" ] && [ "$(col pred_iter_s baseline 0 "$tmp/back.csv")" = "$master_on" ]; then
	report ok "advise: --ds-config reads the patch back to the advised settings"
else
	report fail "advise: --ds-config reads the patch back to the advised settings" \
		"$(cat "$tmp/back.csv" "$tmp/first.csv" "$tmp/err")"
fi
# shellcheck disable=SC2086
if "$bin" advise --ds-config $ds/stage3.json $tiny --profile reference --format json \
	>"$tmp/out.json" 2>"$tmp/err" &&
	python3 -c 'import json, sys; r = json.load(open(sys.argv[1])); assert r[0]["role"] == "baseline" and r[0]["stage"] == 3 and r[0]["sub_group_size_elems"] == 20000 and r[1]["role"] == "advised"' "$tmp/out.json"; then
	report ok "advise --format json: the rows, the baseline the config's ZeRO-3 sub-group"
else
	report fail "advise --format json: the rows, the baseline the config's ZeRO-3 sub-group" \
		"$(head -c 2000 "$tmp/out.json"; cat "$tmp/err")"
fi

# 2. --confirm on the device: measured beside predicted, and the verdict. The
# two best points that change something are run beside the baseline: with the
# device's own profile (a cached one) the best may be the baseline itself,
# which is not run twice.
# shellcheck disable=SC2086
if timeout -k 5 300 "$bin" advise --ds-config $ds/stage2.json $tiny --confirm --runs 1 \
	--steps 2 --format csv >"$tmp/confirm.csv" 2>"$tmp/err" &&
	[ -n "$(col meas_iter_s baseline 0 "$tmp/confirm.csv")" ] &&
	python3 -c 'import csv, sys
rows = [r for r in csv.DictReader(open(sys.argv[1])) if r["role"] == "advised"]
ran = [int(r["rank"]) for r in rows if r["meas_iter_s"]]
assert len(ran) == 2 and ran[0] <= 2, ran' "$tmp/confirm.csv" &&
	[ "$(col order_agrees baseline 0 "$tmp/confirm.csv")" != "" ]; then
	report ok "advise --confirm: the baseline and the two best measured beside predicted"
else
	report fail "advise --confirm: the baseline and the two best measured beside predicted" \
		"$(cat "$tmp/confirm.csv" "$tmp/err")"
fi
# shellcheck disable=SC2086
if timeout -k 5 300 "$bin" advise --ds-config $ds/stage2.json $tiny --confirm --runs 1 \
	--steps 2 >"$tmp/confirm.md" 2>"$tmp/err" &&
	grep -q "Measured iteration / apply" "$tmp/confirm.md" &&
	grep -Eq "order of the iterations (agrees|does NOT agree)" "$tmp/confirm.md"; then
	report ok "advise --confirm: the table says whether the measured order agrees"
else
	report fail "advise --confirm: the table says whether the measured order agrees" \
		"$(cat "$tmp/confirm.md" "$tmp/err")"
fi

# 3. The reference's finding, on the reference profile, with what DeepSpeed has.
start=$(date +%s)
"$bin" advise --ds-config $ds/advise-zero2.json --model qwen3-4b --profile reference \
	--format csv >"$tmp/z2.csv" 2>"$tmp/err"
"$bin" advise --ds-config $ds/advise-zero3.json --model qwen3-4b --profile reference \
	--zero3-apply subgroup --format csv >"$tmp/z3.csv" 2>>"$tmp/err"
took=$(($(date +%s) - start))
if [ "$(col variant advised 1 "$tmp/z2.csv")" = both ] &&
	[ "$(col pin_memory advised 1 "$tmp/z2.csv")" = on ] &&
	[ "$(col variant baseline 0 "$tmp/z2.csv")" = master ]; then
	report ok "advise, ZeRO-2 on the reference: pin and overlap both (the reference change)"
else
	report fail "advise, ZeRO-2 on the reference: pin and overlap both (the reference change)" \
		"$(cat "$tmp/z2.csv" "$tmp/err")"
fi
# ZeRO-3: both, at a smaller sub-group than the config's 1e9, a lower step peak, the
# same time (within 0.5%) as both at 1e9
both1e9=$(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
	$c["role"] == "advised" && $c["variant"] == "both" && $c["sub_group_size_elems"] == 1000000000 {
	print $c["pred_iter_s"], $c["peak_step_bytes"]; exit }' "$tmp/z3.csv")
if [ "$(col variant advised 1 "$tmp/z3.csv")" = both ] &&
	[ "$(col sub_group_size_elems advised 1 "$tmp/z3.csv")" -lt 1000000000 ] &&
	[ -n "$both1e9" ] &&
	awk -v it="$(col pred_iter_s advised 1 "$tmp/z3.csv")" \
		-v pk="$(col peak_step_bytes advised 1 "$tmp/z3.csv")" -v ref="$both1e9" \
		'BEGIN { split(ref, r, " "); exit !(it <= r[1] * 1.005 && pk < r[2]) }'; then
	report ok "advise, ZeRO-3 on the reference: both, a smaller sub-group lowers the step peak at no time cost"
else
	report fail "advise, ZeRO-3 on the reference: both, a smaller sub-group lowers the step peak at no time cost" \
		"$(cat "$tmp/z3.csv" "$tmp/err")"
fi
if [ "$took" -lt 10 ]; then
	report ok "advise on Qwen3-4B without a device: both stages in under 10 s ($took s)"
else
	report fail "advise on Qwen3-4B without a device: both stages in under 10 s" "took $took s"
fi
if grep -q "predicts from the reference profile\|profile reference" "$tmp/err" ||
	"$bin" advise --ds-config $ds/advise-zero2.json --model qwen3-4b --profile reference |
	grep -q "Predicted from --profile reference"; then
	report ok "advise: says which profile it predicts from"
else
	report fail "advise: says which profile it predicts from" "$(cat "$tmp/err")"
fi

# 4. Refusals, exit 2.
expect_error "advise: without --ds-config" 2 "advise needs --ds-config FILE" advise --model tiny
expect_error "advise: a config without offload" 2 "$ds/no-offload.json: no zero_optimization.offload_optimizer" advise --ds-config $ds/no-offload.json --model tiny
expect_error "advise: a bad config, with FILE:LINE:COL" 2 "$ds/bad-type.json:4:23: zero_optimization.sub_group_size: must be a number" advise --ds-config $ds/bad-type.json --model tiny
expect_error "advise: NVMe offload" 2 "$ds/nvme.json:5:17: zero_optimization.offload_optimizer.device" advise --ds-config $ds/nvme.json --model tiny
expect_error "advise: one stage" 2 "--stage 2,3: advise takes one stage" advise --ds-config $ds/advise-zero2.json --stage 2,3 --profile reference
"$bin" advise --ds-config $ds/advise-zero3.json --model qwen3-4b --profile reference \
	--device-mem-limit 1Gi >"$tmp/out" 2>"$tmp/err"
rc=$?
if [ "$rc" -eq 2 ] && [ ! -s "$tmp/out" ] &&
	grep -q "nothing fits: none of the .* points swept fits .*--device-mem-limit 1.00 GiB" "$tmp/err"; then
	report ok "advise: an impossible memory limit is refused, exit 2"
else
	report fail "advise: an impossible memory limit is refused, exit 2" "exit $rc; $(cat "$tmp/err")"
fi
"$bin" advise --ds-config $ds/advise-zero3.json --model qwen3-4b --profile reference \
	--device-mem-limit 15Gi --zero3-apply subgroup >"$tmp/out" 2>"$tmp/err"
if grep -q '^| baseline (does not fit) |' "$tmp/out" && grep -q '^Dropped, ' "$tmp/out" &&
	grep -qF "does not fit: the device peak (step phase, CLBlast's temporaries aside) is 16.4 GiB and the --device-mem-limit is 15.0 GiB" "$tmp/out"; then
	report ok "advise: what does not fit is dropped, and said"
else
	report fail "advise: what does not fit is dropped, and said" "$(cat "$tmp/out" "$tmp/err")"
fi

echo "1..$n"
[ "$failed" -eq 0 ]

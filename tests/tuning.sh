#!/bin/sh
# How --tuning auto chooses CLBlast's parameters on the device at hand, with
# tunings planted in a scratch cache and the shipped ones left out: one of
# the same architecture is applied as it is; one only of the same family is
# checked with ns --verify in a child first, the verdict cached, and not
# applied when it fails. Also ns's machine-read output. Prints TAP.
# Usage: tests/tuning.sh path/to/muonbench   (from the repository root)
set -u
bin=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=0
failed=0
. tests/tap.sh

export XDG_CACHE_HOME="$tmp/cache" MUONBENCH_SHIPPED_TUNINGS=off
cache=$XDG_CACHE_HOME/muonbench
mkdir -p "$cache"

# this device's driver and architecture, as devices shows them
row=$("$bin" devices | awk -F' [|] ' 'NR == 3')
driver=$(echo "$row" | awk -F' [|] ' '{ print $6 }')
arch=$(echo "$row" | awk -F' [|] ' '{ print $8 }')

# The shipped tuning's kernels, made for DEVICE of ARCH under DRIVER; with BAD,
# an indirect GEMM tile (MWG 8) that computes wrong results, into FILE.
planted() {
	sed -e "s/\"device\":.*/\"device\": \"$1\",/" -e "s/\"architecture\":.*/\"architecture\": \"$2\",/" \
		-e "s/\"driver\":.*/\"driver\": \"$3\",/" \
		-e "s/\"tuned_utc\":.*/\"tuned_utc\": \"${4:-good}\",/" \
		-e "${4:+s/\"MWG\":.*/\"MWG\": 8,/}" tuning/pocl-3.1-haswell-amd-epyc.json >"$5"
}

# a family tuning that computes wrong results: checked, refused, the verdict cached
planted "pthread-fakecpu-Fake CPU" fakecpu 0.0 bad "$cache/clblast-fake.json"
expect_output "tuning: a family tuning that fails ns --verify is not applied" \
	"CLBlast parameters: default (none: $cache/clblast-fake.json (made for 'pthread-fakecpu-Fake CPU', another CPU of Portable Computing Language) failed ns --verify here)" \
	ns --shape 64x64 --reps 1
if grep -q "checking it on" "$tmp/err" && grep -q "failed ns --verify" "$tmp/err" &&
	grep -q "^fail $cache/clblast-fake.json tuned bad" "$cache"/verified-*.txt; then
	report ok "tuning: the failed check is said on stderr and cached"
else
	report fail "tuning: the failed check is said on stderr and cached" "$(cat "$tmp/err" "$cache"/verified-*.txt)"
fi
expect_output "tuning: the cached verdict is used again" "failed ns --verify here" ns --shape 64x64 --reps 1
if grep -q "checking it on" "$tmp/err"; then
	report fail "tuning: no second check" "$(cat "$tmp/err")"
else
	report ok "tuning: no second check"
fi
expect_output "tuning: devices says the family tuning failed" "default: $cache/clblast-fake.json (family; it failed ns --verify here)" devices

# a family tuning that computes right: checked, then applied and recorded
planted "pthread-fakecpu-Fake CPU" fakecpu 0.0 "" "$cache/clblast-fake.json"
expect_output "tuning: a family tuning that passes ns --verify is applied" \
	"CLBlast parameters: $cache/clblast-fake.json (family: made for 'pthread-fakecpu-Fake CPU', another CPU of Portable Computing Language; it passed ns --verify here)" \
	ns --shape 64x64 --reps 1
"$bin" run --config tests/data/good/micro.json --seq 16 --stage 2 --variant master --runs 1 \
	--steps 2 --quiet --format csv --out "$tmp/run.csv" >/dev/null 2>&1
if awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i } NR == 2 { exit !($c["tuning_match"] == "family") }' "$tmp/run.csv"; then
	report ok "tuning: a run's rows record the match"
else
	report fail "tuning: a run's rows record the match" "$(cat "$tmp/run.csv")"
fi

# one of the same architecture and driver, another CPU model: applied without a check
rm -f "$cache"/*
if [ -n "$arch" ] && [ "$arch" != unknown ]; then
	planted "pthread-$arch-Another CPU" "$arch" "$driver" "" "$cache/clblast-same-arch.json"
	expect_output "tuning: a tuning of the same architecture is applied" \
		"CLBlast parameters: $cache/clblast-same-arch.json (architecture: made for 'pthread-$arch-Another CPU', of the same architecture '$arch' and driver $driver)" \
		ns --shape 64x64 --reps 1
	if grep -q "checking it on" "$tmp/err"; then
		report fail "tuning: an architecture match is not checked" "$(cat "$tmp/err")"
	else
		report ok "tuning: an architecture match is not checked"
	fi
else
	report fail "tuning: devices shows no architecture for this device" "$row"
fi
rm -f "$cache"/*
expect_output "tuning: nothing fits: CLBlast's defaults, and why" "CLBlast parameters: default (none: no tuning for" \
	ns --shape 64x64 --reps 1

# ns's machine-read output: what tune reads its children's figures from
expect_output "ns --format csv: a header with the figures' names" "ns_format_version,platform,device,driver,tuning,tuning_match,rows,cols,ns_method,ns_flops,batch,reps,ns_median_s" \
	ns --shape 64x64,32x48 --reps 1 --format csv
if [ "$(wc -l <"$tmp/out")" -eq 5 ]; then
	report ok "ns --format csv: one row per shape and method"
else
	report fail "ns --format csv: one row per shape and method" "$(cat "$tmp/out")"
fi
expect_output "ns --format json: a list of objects" '"ns_median_s": ' ns --shape 64x64 --reps 1 --format json

# tune --ns: our 16-bit GEMM's tiles swept, checked and stored, with the
# CLBlast parameters that apply here kept (a same-architecture one planted)
rm -f "$cache"/*
if [ -n "$arch" ] && [ "$arch" != unknown ]; then
	planted "pthread-$arch-Another CPU" "$arch" "$driver" "" "$cache/clblast-same-arch.json"
fi
expect_output "tune --ns: a table of the tiles, each checked" "| C up to 262144 | 3 (3) | 64x64x16/128 | - |" \
	tune --ns --shape 96x200,600x1000 --time-budget 10m
own=$(sed -n 's/^Stored in \(.*\.json\): ns_gemm \([^ ]*\)\. .*/\1/p' "$tmp/out")
tiles=$(sed -n 's/^Stored in \(.*\.json\): ns_gemm \([^ ]*\)\. .*/\2/p' "$tmp/out")
if [ -n "$own" ] && grep -q "\"ns_gemm\":.*\"$tiles\"" "$own" && grep -q '"Xgemm"' "$own" &&
	grep -q "C up to 1048576 | 3 (3) |" "$tmp/out" && [ "$(grep -c '| ok |' "$tmp/out")" -eq 16 ]; then
	report ok "tune --ns: both size classes timed, the tiles stored beside the architecture's CLBlast kernels"
else
	report fail "tune --ns: both size classes timed, the tiles stored beside the architecture's CLBlast kernels" \
		"$(cat "$tmp/out" "$tmp/err" "$own")"
fi
rm -f "$cache/clblast-same-arch.json"
expect_output "tune --ns: ns runs the stored tiles" "portable, tiles $tiles (the tuning's), match the default" \
	ns --shape 96x200 --ns-precision bf16 --reps 1
if grep -qF "CLBlast parameters and Newton-Schulz tiles: $own (exact: " "$tmp/out"; then
	report ok "tune --ns: ns says the tuning supplies CLBlast's parameters and the tiles"
else
	report fail "tune --ns: ns says the tuning supplies CLBlast's parameters and the tiles" "$(head -5 "$tmp/out")"
fi
expect_output "tune --ns: --tuning off runs the default tile" "bf16 and fp16 GEMMs: kernels/ns_gemm.cl, portable: no mma path" \
	ns --shape 96x200 --ns-precision bf16 --reps 1 --tuning off
MUONBENCH_NS_TILE=32x32x16/64 expect_output "MUONBENCH_NS_TILE over the tuning's tiles" \
	"portable, tiles 32x32x16/64 (MUONBENCH_NS_TILE's), match the default" ns --shape 96x200 --ns-precision fp16 --reps 1
MUONBENCH_NS_TILE=128x128x32/256/4 expect_output "MUONBENCH_NS_TILE: the mma path's tiles set aside on a CPU" \
	"(MUONBENCH_NS_TILE's mma tiles set aside: 128x128x32/256/4)" ns --shape 96x200 --ns-precision fp16 --reps 1
MUONBENCH_NS_TILE=64x64x16/128,32x32x16/64 expect_error "MUONBENCH_NS_TILE: not classes, refused" 2 \
	"MUONBENCH_NS_TILE: ns_gemm tiles '64x64x16/128,32x32x16/64': only the last entry is without a bound" \
	ns --shape 96x200 --ns-precision fp16 --reps 1
sed 's|"ns_gemm":.*|"ns_gemm": "9:64x64x16/128",|' "$own" >"$tmp/bad.json" && mv "$tmp/bad.json" "$own"
expect_error "tune --ns: a given tuning's bad tiles are refused, naming the file" 2 \
	"$own: ns_gemm: ns_gemm tiles '9:64x64x16/128': the last entry has no bound" \
	ns --shape 96x200 --ns-precision fp16 --reps 1 --tuning "$own"
expect_output "tune --ns: under --tuning auto, bad tiles are set aside and said" \
	"its ns_gemm set aside: ns_gemm tiles '9:64x64x16/128': the last entry has no bound" \
	ns --shape 96x200 --ns-precision fp16 --reps 1
rm -f "$cache"/*
expect_output "tune --ns: a spent budget tries the default alone, and stores it" \
	"(--time-budget spent: 1 of 8 tiles tried)" tune --ns --shape 1024x2048 --time-budget 1s
if grep -q "ns_gemm 64x64x16/128\. " "$tmp/out" && ! grep -q '"Xgemm"' "$cache"/clblast-*.json; then
	report ok "tune --ns: the default stored, and no CLBlast kernels where none applied"
else
	report fail "tune --ns: the default stored, and no CLBlast kernels where none applied" "$(cat "$tmp/out" "$cache"/clblast-*.json)"
fi
# a tuning of the tiles alone: CLBlast's defaults said, not the file's parameters
tiles_only=$(sed -n 's/^Stored in \(.*\.json\): ns_gemm .*/\1/p' "$tmp/out")
expect_output "tune --ns: ns says a tuning of the tiles alone leaves CLBlast's defaults" \
	"Newton-Schulz tiles: $tiles_only (exact: " ns --shape 64x64 --reps 1
if grep -qF "; CLBlast parameters: default (none in it)." "$tmp/out" && ! grep -q "CLBlast parameters: $tiles_only" "$tmp/out"; then
	report ok "tune --ns: ns names no CLBlast parameters of the tiles' file"
else
	report fail "tune --ns: ns names no CLBlast parameters of the tiles' file" "$(head -5 "$tmp/out")"
fi
"$bin" run --config tests/data/good/micro.json --fwd-bwd off --stage 2 --variant master --runs 1 \
	--steps 2 --out "$tmp/tiles.csv" >"$tmp/out" 2>"$tmp/err"
if grep -qF "Newton-Schulz tiles: $tiles_only (exact: " "$tmp/out" &&
	awk -F, -v f="$tiles_only" 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i } NR == 2 { exit !($c["tuning"] == f && $c["tuning_match"] == "exact") }' "$tmp/tiles.csv"; then
	report ok "tune --ns: run says the same, its rows' tuning the file as before"
else
	report fail "tune --ns: run says the same, its rows' tuning the file as before" "$(cat "$tmp/out" "$tmp/err")"
fi

echo "1..$n"
[ "$failed" -eq 0 ] || echo "# $failed of $n failed"
[ "$failed" -eq 0 ]

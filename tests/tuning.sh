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

echo "1..$n"
[ "$failed" -eq 0 ] || echo "# $failed of $n failed"
[ "$failed" -eq 0 ]

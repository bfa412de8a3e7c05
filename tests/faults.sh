#!/bin/sh
# A driver that fails as NVIDIA's did on an H200, planted on any device by
# tests/clshim.c (LD_PRELOAD): a fill past a limit fails with -9999, a fault
# kills the context, a wait never returns. muonbench zeroes with a kernel of
# its own (no fill to choke on), ends the faulted cell with a "device lost"
# row and runs the others on the device opened anew, and after a signal ends
# within its grace even when the driver never returns; and where the platform
# offers NVIDIA's clCreateBufferNV (the shim's), pinned memory is made by it;
# tune --ns stores the tiles it measured before the device was lost.
# Prints TAP.
# Usage: tests/faults.sh path/to/muonbench path/to/clshim.so   (from the repository root)
set -u
bin=$1
shim=$(cd "$(dirname "$2")" && pwd)/$(basename "$2")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=0
failed=0
. tests/tap.sh
# the shim comes before an ASan build's runtime in the load order
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0"

# rows FILE: "stage variant status reason" per row
rows() {
	python3 -c 'import csv, sys
for r in csv.DictReader(open(sys.argv[1])):
    print(r["stage"], r["variant"], r["status"], r["checksum"], r["reason"][:160])' "$1"
}

# 1. Fills. 2 MiB stands in for 2^31 bytes: on the tiny model ZeRO-3's first
# momentum (4.7 MB in) and a 1024-token forward/backward's zeros pass it.
tiny="--model tiny --layers 1 --gather-budget 2Mi --variant master --runs 1 --steps 2 --measure 2-2 --profile off --quiet"
# ns fills its output with NaN before each run and clears its workspace: with a kernel too
LD_PRELOAD=$shim MB_SHIM_FILL_END=2097152 MB_SHIM_LOG="$tmp/fill.log" "$bin" ns --shape 768x768 --reps 1 --verify >"$tmp/out" 2>"$tmp/err"
if [ $? -eq 0 ] && ! grep -q fill "$tmp/fill.log" 2>/dev/null; then
	report ok "faults: ns fills 2.25 MiB of NaN with no clEnqueueFillBuffer"
else
	report fail "faults: ns fills 2.25 MiB of NaN with no clEnqueueFillBuffer" "$(cat "$tmp/err" "$tmp/fill.log")"
fi
for cell in "--stage 3 --fwd-bwd off" "--stage 3 --fwd-bwd off --sub-group-size 1e5" \
	"--stage 3 --fwd-bwd off --zero3-apply batched" "--stage 2 --seq 1024" "--stage 3 --seq 1024"; do
	# shellcheck disable=SC2086
	LD_PRELOAD=$shim MB_SHIM_FILL_END=2097152 "$bin" run $tiny $cell --out "$tmp/fill.csv" >/dev/null 2>"$tmp/err"
	rc=$?
	if [ $rc -eq 0 ] && [ "$(rows "$tmp/fill.csv" | grep -c ' ok ')" -eq 1 ]; then
		report ok "faults: no fill past 2 MiB: $cell"
	else
		report fail "faults: no fill past 2 MiB: $cell" "exit $rc: $(cat "$tmp/err")"
	fi
	rm -f "$tmp/fill.csv"
done

# 2. A fault in one cell of ten: that row says "device lost", the nine others
# are ok, in the same state as a run without the fault. K runs over the
# waits of the whole invocation, its last ones (a run's release, the check
# after it) included.
micro="--config tests/data/good/micro.json --gather-budget 128Ki --fwd-bwd off --stage 2,3 --variant all --runs 1 --steps 2 --measure 2-2 --profile off --quiet"
# shellcheck disable=SC2086
LD_PRELOAD=$shim MB_SHIM_LOG="$tmp/log" "$bin" run $micro --out "$tmp/clean.csv" >/dev/null 2>"$tmp/err"
waits=$(sed -n 's/^waits //p' "$tmp/log" | sort -n | tail -1)
rows "$tmp/clean.csv" | awk '{print $1, $4}' | sort -u >"$tmp/sums"
if [ "$(rows "$tmp/clean.csv" | grep -c ' ok ')" -eq 10 ] && [ "${waits:-0}" -gt 20 ] &&
	[ "$(wc -l <"$tmp/sums")" -eq 2 ]; then
	report ok "faults: ten cells without a fault, $waits waits"
else
	report fail "faults: ten cells without a fault" "$(cat "$tmp/err") waits ${waits:-none}"
	waits=0
fi
bad=""
k=1
while [ "$waits" -gt 0 ] && [ $k -le "$waits" ]; do
	rm -f "$tmp/k.csv"
	# shellcheck disable=SC2086
	LD_PRELOAD=$shim MB_SHIM_FAULT=$k "$bin" run $micro --out "$tmp/k.csv" >/dev/null 2>"$tmp/err"
	rc=$?
	rows "$tmp/k.csv" >"$tmp/k.rows"
	# and muonbench reads back what it wrote
	if ! "$bin" report "$tmp/k.csv" >/dev/null 2>"$tmp/rerr"; then
		bad="$bad
K=$k: report refuses the file: $(cat "$tmp/rerr")"
	fi
	if [ $rc -ne 1 ] || [ "$(wc -l <"$tmp/k.rows")" -ne 10 ] ||
		[ "$(grep -c ' failed [0-9a-f]* device lost: ' "$tmp/k.rows")" -ne 1 ] ||
		[ "$(grep -c ' ok ' "$tmp/k.rows")" -ne 9 ] ||
		! grep ' ok ' "$tmp/k.rows" | awk '{print $1, $4}' | sort -u | cmp -s - "$tmp/sums"; then
		bad="$bad
K=$k exit $rc: $(cat "$tmp/k.rows" "$tmp/err")"
	fi
	# every 17th wait, and each of the last 8
	if [ $k -lt $((waits - 8)) ] && [ $((k + 17)) -ge $((waits - 8)) ]; then
		k=$((waits - 8))
	elif [ $k -lt $((waits - 8)) ]; then
		k=$((k + 17))
	else
		k=$((k + 1))
	fi
done
if [ -z "$bad" ] && [ "$waits" -gt 0 ]; then
	report ok "faults: a fault at any wait fails one row of ten as 'device lost', the rest ok and alike"
else
	report fail "faults: a fault at any wait fails one row of ten as 'device lost', the rest ok and alike" "$bad"
fi

# A device that cannot be opened again after the fault: the cells left are rows that say so,
# and the file still reads back whole (the rows keep the device's name, tuning and pinning).
rm -f "$tmp/gone.csv"
# shellcheck disable=SC2086
LD_PRELOAD=$shim MB_SHIM_FAULT=50 MB_SHIM_NO_REOPEN=1 "$bin" run $micro --out "$tmp/gone.csv" >/dev/null 2>"$tmp/err"
rc=$?
rows "$tmp/gone.csv" >"$tmp/gone.rows"
if [ $rc -eq 1 ] && [ "$(wc -l <"$tmp/gone.rows")" -eq 10 ] &&
	[ "$(grep -c ' failed [0-9a-f]* device lost: ' "$tmp/gone.rows")" -eq 1 ] &&
	[ "$(grep -c ' failed [0-9a-f]* not run: the device was lost and could not be opened again: ' "$tmp/gone.rows")" -ge 8 ] &&
	"$bin" report "$tmp/gone.csv" >/dev/null 2>>"$tmp/err"; then
	report ok "faults: a device that cannot be opened again: the cells left say so, the file reads back"
else
	report fail "faults: a device that cannot be opened again: the cells left say so, the file reads back" "exit $rc: $(cat "$tmp/gone.rows" "$tmp/err")"
fi

# 3. A wait that never returns: after SIGTERM the process ends within its
# grace (2 s here), the finished runs' rows kept and the cut one interrupted;
# a second signal ends it at once.
hang() { # K GRACE SIGNALS...: start a run that hangs at wait K, signal it, time the exit
	k=$1 grace=$2
	shift 2
	rm -f "$tmp/h.csv" "$tmp/hlog"
	# shellcheck disable=SC2086
	LD_PRELOAD=$shim MB_SHIM_HANG=$k MB_SHIM_LOG="$tmp/hlog" MUONBENCH_STOP_GRACE_S=$grace \
		"$bin" run $micro --out "$tmp/h.csv" >/dev/null 2>"$tmp/herr" &
	pid=$!
	i=0
	while ! grep -q hang "$tmp/hlog" 2>/dev/null && [ $i -lt 300 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	start=$(date +%s)
	for sig in "$@"; do
		kill -"$sig" $pid
		sleep 0.3
	done
	i=0
	while kill -0 $pid 2>/dev/null && [ $i -lt 200 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	took=$(($(date +%s) - start))
	kill -KILL $pid 2>/dev/null
	wait $pid
	hrc=$?
}
hang 300 2 TERM
rows "$tmp/h.csv" >"$tmp/h.rows"
if [ $hrc -eq 1 ] && [ $took -le 5 ] && [ "$(grep -c ' ok ' "$tmp/h.rows")" -ge 1 ] &&
	[ "$(tail -1 "$tmp/h.rows" | awk '{print $3}')" = interrupted ] &&
	[ "$(grep -vc ' ok ' "$tmp/h.rows")" -eq 1 ] &&
	grep -q "did not return within 2 s" "$tmp/herr"; then
	report ok "faults: stuck in a wait, SIGTERM ends it within the grace, whole rows kept (${took} s)"
else
	report fail "faults: stuck in a wait, SIGTERM ends it within the grace, whole rows kept" "exit $hrc after ${took} s: $(cat "$tmp/h.rows" "$tmp/herr")"
fi
hang 300 60 TERM INT
if [ $hrc -eq 1 ] && [ $took -le 3 ] && grep -q "a second signal: exiting now" "$tmp/herr" &&
	[ "$(rows "$tmp/h.csv" | grep -c ' ok ')" -ge 1 ]; then
	report ok "faults: a second signal ends it at once (${took} s)"
else
	report fail "faults: a second signal ends it at once" "exit $hrc after ${took} s: $(cat "$tmp/herr")"
fi

# 4. Pinned memory through NVIDIA's clCreateBufferNV, where the platform has it (here, the
# shim's): auto takes it, the rows say so, the final state is the same as with
# CL_MEM_ALLOC_HOST_PTR; asked for where it is absent, it is refused before anything runs.
expect_error "faults: --pinned-alloc nv where the platform lacks clCreateBufferNV" 2 \
	"--pinned-alloc nv: the platform of '" run --config tests/data/good/micro.json --pinned-alloc nv \
	--fwd-bwd off --profile off --stage 2 --variant master --runs 1 --steps 2 --out "$tmp/never.csv"
pin="--config tests/data/good/micro.json --gather-budget 128Ki --fwd-bwd off --profile off --stage 2 --variant master,both --runs 1 --steps 2 --quiet"
rm -f "$tmp/nvlog"
# shellcheck disable=SC2086 # $pin is a list of options
LD_PRELOAD=$shim MB_SHIM_NV=1 MB_SHIM_LOG="$tmp/nvlog" "$bin" run $pin --out "$tmp/nv.csv" >/dev/null 2>"$tmp/err"
rc=$?
# shellcheck disable=SC2086
LD_PRELOAD=$shim MB_SHIM_NV=1 "$bin" run $pin --pinned-alloc alloc-host-ptr --out "$tmp/ahp.csv" >/dev/null 2>>"$tmp/err"
pinned() {
	python3 -c 'import csv, sys
for r in csv.DictReader(open(sys.argv[1])):
    print(r["status"], r["pinned_alloc"], r["checksum"])' "$1" | sort -u
}
nv=$(pinned "$tmp/nv.csv")
ahp=$(pinned "$tmp/ahp.csv")
if [ $rc -eq 0 ] && [ "$(echo "$nv" | wc -l)" -eq 1 ] && [ "${nv%% *}" = ok ] &&
	[ "$(echo "$nv" | cut -d' ' -f2)" = nv ] && [ "$(echo "$ahp" | cut -d' ' -f2)" = alloc-host-ptr ] &&
	[ "$(echo "$nv" | cut -d' ' -f3)" = "$(echo "$ahp" | cut -d' ' -f3)" ] &&
	grep -qx "nv 3" "$tmp/nvlog"; then
	report ok "faults: auto pins through clCreateBufferNV (LOCATION_HOST | PINNED) where it exists, same state"
else
	report fail "faults: auto pins through clCreateBufferNV (LOCATION_HOST | PINNED) where it exists, same state" "exit $rc: nv: $nv; ahp: $ahp; $(cat "$tmp/err" "$tmp/nvlog" 2>/dev/null)"
fi

# 5. A wrong result with no error, as a race leaves it: the last blocking read
# (the last run's resident params, read back into its checksum) flipped. Only
# that run's group of the summary says MISMATCH.
flip="--config tests/data/good/micro.json --gather-budget 128Ki --fwd-bwd off --profile off --stage 2,3 --variant master,both --runs 1 --steps 2"
rm -f "$tmp/flip.log"
# shellcheck disable=SC2086
LD_PRELOAD=$shim MB_SHIM_LOG="$tmp/flip.log" "$bin" run $flip --out "$tmp/flip1.csv" >/dev/null 2>&1
last=$(awk '/^reads/ { print $2 }' "$tmp/flip.log")
# shellcheck disable=SC2086
LD_PRELOAD=$shim MB_SHIM_FLIP_READ="$last" "$bin" run $flip --out "$tmp/flip2.csv" >"$tmp/flip.out" 2>&1
rc=$?
if [ $rc -eq 1 ] && grep -q "Final state, fp32 momentum, gram Newton-Schulz: bitwise identical over 2 runs" "$tmp/flip.out" &&
	grep -q "Final state, bf16 momentum, gram Newton-Schulz: MISMATCH over 2 runs" "$tmp/flip.out"; then
	report ok "faults: the params read back into the checksum, and MISMATCH said of the group that differs alone"
else
	report fail "faults: the params read back into the checksum, and MISMATCH said of the group that differs alone" "exit $rc, read $last flipped: $(cat "$tmp/flip.out")"
fi

# 6. Copies held back 2 ms after each enqueue, as a GPU's copies run slow beside
# its compute (PoCL's slow kernels hide what a GPU would show): every stage and
# variant still ends in the same state as without, race-checked all the while.
rm -f "$tmp/delay.log"
# shellcheck disable=SC2086
LD_PRELOAD=$shim MB_SHIM_COPY_DELAY_US=2000 MB_SHIM_LOG="$tmp/delay.log" MUONBENCH_RACE_CHECK=1 \
	"$bin" run ${flip%--variant*}--variant all --runs 1 --steps 2 --out "$tmp/delay.csv" >"$tmp/delay.out" 2>&1
rc=$?
# shellcheck disable=SC2086
"$bin" run ${flip%--variant*}--variant all --runs 1 --steps 2 --out "$tmp/nodelay.csv" >"$tmp/nodelay.out" 2>&1
sums() { grep '^Final state' "$1" | sed 's/; step-phase.*//'; }
if [ $rc -eq 0 ] && [ "$(awk '/^delayed/ { print $2 }' "$tmp/delay.log")" -gt 100 ] &&
	[ "$(sums "$tmp/delay.out" | grep -c 'bitwise identical over 5 runs')" -eq 2 ] &&
	[ "$(sums "$tmp/delay.out")" = "$(sums "$tmp/nodelay.out")" ]; then
	report ok "faults: copies held back 2 ms each, every variant race-free and in the same state as without"
else
	report fail "faults: copies held back 2 ms each, every variant race-free and in the same state as without" "exit $rc: $(cat "$tmp/delay.log" "$tmp/delay.out" "$tmp/nodelay.out")"
fi

# 7. profile (issue 44, item 6): a write that still fails after the measuring (the disk filled
# meanwhile: the shim's rename fails) loses nothing: the profile is on stdout, exit 1.
LD_PRELOAD=$shim MB_SHIM_RENAME_FAIL=lost.json "$bin" profile --reps 1 --shape 64x64 \
	--out "$tmp/lost.json" >"$tmp/out" 2>"$tmp/err"
rc=$?
if [ "$rc" -eq 1 ] && [ ! -e "$tmp/lost.json" ] &&
	python3 -c 'import json, sys; p = json.load(open(sys.argv[1])); assert p["format_version"] == 4 and p["h2d_pinned_gbs"] > 0' "$tmp/out" 2>/dev/null &&
	grep -q "^muonbench: cannot write '$tmp/lost.json': No space left on device; the profile measured is on standard output$" "$tmp/err"; then
	report ok "faults: profile's write that fails after the measuring leaves the profile on stdout"
else
	report fail "faults: profile's write that fails after the measuring leaves the profile on stdout" "exit $rc: $(head -5 "$tmp/out" "$tmp/err")"
fi

# 8. tune --ns: the device lost in the fifth tile's second size class stores the best of
# the four tiles before it (each checked and timed on both classes), the fifth set aside on
# the class it passed too; the loss said, exit 1. K: a clean sweep's waits (8 tiles, the
# same number each, the larger class last), the fifth tile's last but one.
sweep="tune --ns --shape 96x200,520x520 --time-budget 10m"
mkdir -p "$tmp/tune-clean" "$tmp/tune-lost"
# shellcheck disable=SC2086
XDG_CACHE_HOME="$tmp/tune-clean" MUONBENCH_SHIPPED_TUNINGS=off LD_PRELOAD=$shim \
	MB_SHIM_LOG="$tmp/tune.log" "$bin" $sweep >"$tmp/tune-clean.out" 2>&1
waits=$(awk '/^waits/ { if ($2 > w) w = $2 } END { print w + 0 }' "$tmp/tune.log")
fifth=$(awk -F' [|] ' '/^\| C up to/ { print $3 }' "$tmp/tune-clean.out" | uniq | sed -n 5p)
# shellcheck disable=SC2086
XDG_CACHE_HOME="$tmp/tune-lost" MUONBENCH_SHIPPED_TUNINGS=off LD_PRELOAD=$shim \
	MB_SHIM_FAULT=$((waits / 8 * 5 - 1)) "$bin" $sweep >"$tmp/out" 2>"$tmp/err"
rc=$?
stored=$(cat "$tmp"/tune-lost/muonbench/clblast-*.json 2>/dev/null)
if [ "$rc" -eq 1 ] && [ -n "$fifth" ] && [ $((waits % 8)) -eq 0 ] &&
	grep -qF "(tile $fifth, 5 of 8, failed: it is set aside, and the best of the 4 tiles before it stored)" "$tmp/out" &&
	grep -qF "muonbench: tune --ns, tile $fifth (the device was lost): " "$tmp/err" &&
	grep -qF "; the best of the 4 tiles before it stored" "$tmp/err" &&
	echo "$stored" | grep -q '"ns_gemm":[[:space:]]*"[0-9]' && ! echo "$stored" | grep -qF "$fifth"; then
	report ok "faults: tune --ns stores the tiles measured before the device was lost, exit 1"
else
	report fail "faults: tune --ns stores the tiles measured before the device was lost, exit 1" \
		"exit $rc, $waits waits, fifth '$fifth': $(tail -5 "$tmp/out") $(cat "$tmp/err") $stored"
fi

echo "1..$n"
[ "$failed" -eq 0 ]

#!/bin/sh
# run under MPI (docs/mpi.md), on PoCL: two ranks oversubscribed on this
# host run the tiny model through every stage and variant into one file
# with both ranks' rows; each rank's final state is the single-process
# `--world-size 2 --rank R` run's; a failure planted on rank 1 (tests/clshim.c)
# ends both ranks with its row; report and compare read the file. Skipped
# (said so) where muonbench was built without MPI. Prints TAP.
# Usage: tests/mpi.sh path/to/muonbench path/to/clshim.so [yes: MPI built in]
set -u
bin=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
shim=$(cd "$(dirname "$2")" && pwd)/$(basename "$2")
if [ "${3:-}" != yes ] || ! command -v mpirun >/dev/null 2>&1; then
	echo "1..0 # skip mpi.sh: muonbench was built without MPI (or mpirun is missing): apt-get install libopenmpi-dev openmpi-bin, then make"
	exit 0
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=0
failed=0
. tests/tap.sh
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0"
mpirun="mpirun -n 2 --oversubscribe"
[ "$(id -u)" -ne 0 ] || mpirun="$mpirun --allow-run-as-root"
# one host's ranks: no network transports needed
export OMPI_MCA_btl="self,vader" OMPI_MCA_btl_vader_single_copy_mechanism=none

cells="--model tiny --layers 1 --fwd-bwd off --gather-budget 2Mi --profile off --stage 1,2,3 \
--variant all --runs 1 --steps 3 --measure 2-3 --quiet"

# rows FILE: "stage variant rank world status checksum" per row
rows() {
	python3 -c 'import csv, sys
for r in csv.DictReader(open(sys.argv[1])):
    print(r["stage"], r["variant"], r["rank"], r["world_size"], r["status"], r["checksum"], r["reason"][:200])' "$1"
}

# 1. Every stage and variant, two ranks, one file.
# shellcheck disable=SC2086 # lists of options
timeout 300 $mpirun "$bin" run $cells --out "$tmp/two.csv" >"$tmp/out" 2>"$tmp/err"
rc=$?
rows "$tmp/two.csv" >"$tmp/rows" 2>>"$tmp/err"
cells_n=$(awk '$3 == 0' "$tmp/rows" | wc -l)
rank1_n=$(awk '$3 == 1' "$tmp/rows" | wc -l)
if [ "$rc" -eq 0 ] && [ "$cells_n" -eq 15 ] && [ "$rank1_n" -eq 15 ] &&
	! grep -qv " 2 ok " "$tmp/rows"; then
	report ok "mpi: 2 ranks, every stage and variant, both ranks' rows in one file"
else
	report fail "mpi: 2 ranks, every stage and variant, both ranks' rows in one file" \
		"exit $rc; $cells_n rank-0 rows, $rank1_n rank-1 rows: $(cat "$tmp/rows" "$tmp/err" | head -40)"
fi

# 2. Each rank's state is the single-process --world-size 2 --rank R run's.
for r in 0 1; do
	# shellcheck disable=SC2086
	"$bin" run $cells --world-size 2 --rank $r --out "$tmp/alone$r.csv" >/dev/null 2>>"$tmp/err"
	rows "$tmp/alone$r.csv" | awk '{ print $1, $2, $6 }' >"$tmp/alone$r"
	awk -v r=$r '$3 == r { print $1, $2, $6 }' "$tmp/rows" >"$tmp/mpi$r"
done
if [ -s "$tmp/alone1" ] && cmp -s "$tmp/alone0" "$tmp/mpi0" && cmp -s "$tmp/alone1" "$tmp/mpi1" &&
	! cmp -s "$tmp/alone0" "$tmp/alone1"; then
	report ok "mpi: each rank's checksums are the single-process --world-size 2 --rank R run's"
else
	report fail "mpi: each rank's checksums are the single-process --world-size 2 --rank R run's" \
		"$(paste "$tmp/alone0" "$tmp/mpi0" "$tmp/alone1" "$tmp/mpi1" | head -20)"
fi

# 3. A device fault planted on rank 1 ends both ranks, its row and rank 0's saying why.
one="--model tiny --layers 1 --fwd-bwd off --gather-budget 2Mi --profile off --stage 2 \
--variant master,both --runs 2 --steps 3 --measure 2-3 --quiet --out $tmp/fault.csv"
# shellcheck disable=SC2086
timeout 120 mpirun -n 1 --oversubscribe $([ "$(id -u)" -ne 0 ] || echo --allow-run-as-root) \
	"$bin" run $one : -n 1 env LD_PRELOAD="$shim" MB_SHIM_FAULT=40 "$bin" run $one \
	>/dev/null 2>"$tmp/err"
rc=$?
rows "$tmp/fault.csv" >"$tmp/frows" 2>>"$tmp/err"
if [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] &&
	grep -q "^2 [a-z]* 1 2 failed [0-9a-f]* *device lost: " "$tmp/frows" &&
	grep -q "^2 [a-z]* 0 2 failed [0-9a-f]* *stopped: rank 1 failed: " "$tmp/frows" &&
	[ "$(grep -c failed "$tmp/frows")" -eq 2 ]; then
	report ok "mpi: a fault on rank 1 ends both ranks, rank 0's row naming it"
else
	report fail "mpi: a fault on rank 1 ends both ranks, rank 0's row naming it" \
		"exit $rc: $(cat "$tmp/frows" "$tmp/err" | head -30)"
fi

# 4. report and compare read the file: the ranks' section, rank matched with rank.
if "$bin" report "$tmp/two.csv" >"$tmp/out" 2>"$tmp/err" &&
	grep -q "^# Ranks" "$tmp/out" && grep -q "| 2 | both | 2 of 2 |" "$tmp/out"; then
	report ok "mpi: report shows the slowest rank and the spread"
else
	report fail "mpi: report shows the slowest rank and the spread" "$(cat "$tmp/err"; grep -A6 Ranks "$tmp/out")"
fi
"$bin" compare "$tmp/two.csv" "$tmp/two.csv" >"$tmp/out" 2>"$tmp/err"
rc=$?
if [ "$rc" -eq 0 ] && ! grep -qi "no match" "$tmp/out" "$tmp/err"; then
	report ok "mpi: compare matches the ranks' rows in worlds of one size"
else
	report fail "mpi: compare matches the ranks' rows in worlds of one size" "exit $rc: $(head -20 "$tmp/out" "$tmp/err")"
fi
# 5. Under MPI the world is MPI's: a --world-size that disagrees is refused.
# shellcheck disable=SC2086
timeout 60 $mpirun "$bin" run $cells --world-size 3 --out "$tmp/bad.csv" >/dev/null 2>"$tmp/err"
rc=$?
if [ "$rc" -ne 0 ] && grep -q "but MPI's world has 2 ranks" "$tmp/err"; then
	report ok "mpi: --world-size must agree with MPI's world"
else
	report fail "mpi: --world-size must agree with MPI's world" "exit $rc: $(head -5 "$tmp/err")"
fi

# a rank's exit status into the file after it: "rank R rc N"
# shellcheck disable=SC2016 # expanded by the rank's shell
rc_line='"$0" "$@"; echo "rank $OMPI_COMM_WORLD_RANK rc $?" >>'

# 6. A refusal on one rank (--rank that is not MPI's) is agreed on: no hang, every rank exits 2,
#    rank 0 alone says why.
: >"$tmp/err"
: >"$tmp/rcs"
one="--model tiny --layers 1 --fwd-bwd off --gather-budget 2Mi --profile off --stage 2 \
--variant master --runs 1 --steps 2 --measure 1-2 --quiet --out $tmp/refused.csv"
# shellcheck disable=SC2086
timeout -k 5 60 $mpirun sh -c "$rc_line $tmp/rcs" "$bin" run $one --rank 0 >/dev/null 2>"$tmp/err"
rc=$?
if [ "$rc" -ne 124 ] && [ "$rc" -ne 137 ] && [ "$(grep -c ' rc 2$' "$tmp/rcs")" -eq 2 ] &&
	[ "$(grep -c '^muonbench: ' "$tmp/err")" -eq 1 ] &&
	grep -q "^muonbench: rank 1 of 2: --rank 0, but MPI made this process rank 1" "$tmp/err"; then
	report ok "mpi: --rank refused on one rank: every rank exits 2, rank 0 says why"
else
	report fail "mpi: --rank refused on one rank: every rank exits 2, rank 0 says why" \
		"exit $rc: $(cat "$tmp/rcs"; head -8 "$tmp/err")"
fi

# 7. The ranks agree on the options that shape the grid and the step: --steps or --variant
#    that differ are refused at setup, naming the option and the ranks (no hang, no empty file).
for differ in "--steps 3" "--variant both"; do
	: >"$tmp/rcs"
	rm -f "$tmp/refused.csv"
	# shellcheck disable=SC2086
	timeout -k 5 60 mpirun -n 1 --oversubscribe $([ "$(id -u)" -ne 0 ] || echo --allow-run-as-root) \
		sh -c "$rc_line $tmp/rcs" "$bin" run $one : -n 1 sh -c "$rc_line $tmp/rcs" "$bin" run $one $differ \
		>/dev/null 2>"$tmp/err"
	rc=$?
	opt=${differ%% *}
	val=${differ#* }
	if [ "$rc" -ne 124 ] && [ "$rc" -ne 137 ] && [ "$(grep -c ' rc 2$' "$tmp/rcs")" -eq 2 ] &&
		grep -q "^muonbench: the ranks were given different options: $opt is '[a-z0-9]*' on rank 0 and '$val' on rank 1" "$tmp/err" &&
		[ ! -s "$tmp/refused.csv" ]; then
		report ok "mpi: ranks given different $opt are refused, naming it and the ranks"
	else
		report fail "mpi: ranks given different $opt are refused, naming it and the ranks" \
			"exit $rc: $(cat "$tmp/rcs"; grep -v '^--\|^ *$' "$tmp/err" | head -8)"
	fi
done

# 8. A signal to rank 1 after runs finished: both end as interrupted, rank 1 saying its runs
#    are in rank 0's results (not in ''). The signal is sent once the file holds a run's rows
#    (at most 90 s on), not after a fixed time that a loaded machine's start-up can outlast;
#    it lands anywhere in a run or between two, the window after a run's agreement among them
#    (where rank 1 once left the grid alone and rank 0 waited for it for ever).
many="--model tiny --layers 1 --fwd-bwd off --gather-budget 2Mi --profile off --stage 2 \
--variant master --runs 100 --steps 2 --measure 1-2 --quiet --out $tmp/sig.csv"
# shellcheck disable=SC2016 # the rank's shell expands these
signal_after_rows='i=0; while [ $i -lt 900 ] && [ "$(cat "$1" 2>/dev/null | wc -l)" -lt 3 ]; do
	sleep 0.1; i=$((i + 1)); done; kill -TERM $$'
# shellcheck disable=SC2016,SC2086 # the rank's shell expands $$; lists of options
timeout -k 5 120 mpirun -n 1 --oversubscribe $([ "$(id -u)" -ne 0 ] || echo --allow-run-as-root) \
	"$bin" run $many : -n 1 sh -c "(set -- $tmp/sig.csv; $signal_after_rows) & exec \"\$0\" \"\$@\"" \
	"$bin" run $many >/dev/null 2>"$tmp/err"
rc=$?
if [ "$rc" -eq 1 ] && grep -q "^muonbench: interrupted: the runs that finished are in rank 0's results$" "$tmp/err" &&
	grep -q "^muonbench: interrupted: the runs that finished are in '$tmp/sig.csv'$" "$tmp/err" &&
	! grep -q "in ''" "$tmp/err" && [ "$(wc -l <"$tmp/sig.csv")" -gt 2 ]; then
	report ok "mpi: a signal to rank 1: it says its runs are in rank 0's results"
else
	report fail "mpi: a signal to rank 1: it says its runs are in rank 0's results" "exit $rc: $(grep muonbench "$tmp/err" | head -5)"
fi

echo "1..$n"
[ "$failed" -eq 0 ]

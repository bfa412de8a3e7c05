#!/bin/sh
# The gate's noise floor, tried both ways on this machine.
#  - PAIRS pairs of back-to-back identical runs (RUN_ARGS): compare must give
#    no verdict but ok on any cell of any pair, and pass;
#  - each pair's second file with a planted 25% slowdown of the apply of one
#    cell (PLANT, "STAGE,VARIANT"; every measured step's apply times 1.25, its
#    iteration longer by the same seconds, as a slower apply would make it):
#    compare must fail (exit 1) with that cell a REGRESSION.
# RUN_ARGS' 32 short runs a cell are what a 25% change needs on a 2-core VM:
# the floor is 4 s sqrt(2/runs), s the runs' spread, 13-25% there (docs/compare.md).
# The runs are kept in DIR, and a pair already there is reused, so that the
# same runs can be compared again under other settings.
# Prints the count of each verdict over all pairs and how often the planted
# slowdown was caught, for all pairs and for those that other processes left
# alone; exits 1 on a false alarm or a miss.
# Usage: tests/noise.sh BIN DIR [COMPARE-OPTIONS...]
set -u
bin=$1
dir=$2
shift 2
pairs=${PAIRS:-10}
run_args=${RUN_ARGS:---model tiny --layers 1 --fwd-bwd off --gather-budget 2Mi --stage 1,2,3 --variant all --runs 32 --steps 3 --measure 2-3 --profile off}
plant=${PLANT:-2,both}
mkdir -p "$dir" || exit 2

# FILE's measured apply of cell PLANT slowed by 25%, into OUT.
slow_apply() {
	awk -F, -v OFS=, -v cell="$plant" '
		NR == 1 {
			for (i = 1; i <= NF; i++) col[$i] = i
			n = NF
			split(cell, want, ",")
			if (!col["apply_samples_s"] || !col["iter_samples_s"]) {
				print "noise.sh: no per-step samples to slow" > "/dev/stderr"; exit 2
			}
		}
		NR > 1 && $col["stage"] == want[1] && $col["variant"] == want[2] {
			if (NF != n) { print "noise.sh: a row with commas inside" > "/dev/stderr"; exit 2 }
			k = split($col["apply_samples_s"], a, ";")
			split($col["iter_samples_s"], it, ";")
			first = $col["measure_first"]; last = $col["measure_last"]
			ap = ""; itr = ""
			for (i = 1; i <= k; i++) {
				if (i >= first && i <= last) {
					it[i] += 0.25 * a[i]; a[i] *= 1.25
				}
				ap = ap (i > 1 ? ";" : "") sprintf("%.6f", a[i])
				itr = itr (i > 1 ? ";" : "") sprintf("%.6f", it[i])
			}
			$col["apply_samples_s"] = ap; $col["iter_samples_s"] = itr
			$col["iter_mean_s"] = sprintf("%.6f", $col["iter_mean_s"] + 0.25 * $col["apply_mean_s"])
			$col["apply_mean_s"] = sprintf("%.6f", 1.25 * $col["apply_mean_s"])
			planted++
		}
		{ print }
		END { if (!planted) { print "noise.sh: no cell " cell > "/dev/stderr"; exit 2 } }' "$1" >"$2"
}

# Jiffies all CPUs spent busy, then those of this shell's finished children.
busy() {
	awk '/^cpu / { print $2 + $3 + $4 + $7 + $8 + $9 }' /proc/stat
	sed 's/.*) //' /proc/$$/stat | awk '{ print $14 + $15 }'
}

# Run the cells into FILE; FILE.load gets how many CPUs other processes kept
# busy meanwhile (the machine is shared: that moves every timing).
run_into() {
	# shellcheck disable=SC2046 # two numbers
	set -- "$1" $(busy) "$(date +%s.%N)"
	# shellcheck disable=SC2086 # the arguments are a list
	if ! "$bin" run $run_args --out "$1" >"$dir/run.out" 2>&1; then
		cat "$dir/run.out"
		rm -f "$1"
		exit 2
	fi
	# shellcheck disable=SC2046
	set -- "$@" $(busy) "$(date +%s.%N)"
	awk -v b=$(($5 - $2)) -v c=$(($6 - $3)) -v t="$7" -v t0="$4" -v hz="$(getconf CLK_TCK)" \
		'BEGIN { printf "%.2f\n", (b - c) / hz / (t - t0) }' >"$1.load"
}

# The verdict column of compare's table rows, one a line.
verdicts() {
	awk -F'|' '/^\| [0-9]/ { v = $(NF - 1); gsub(/ /, "", v); print v }' "$1"
}

alarms=0
caught=0
# the pairs during which other processes kept under QUIET_CPUS (0.1) busy
quiet=0
quiet_alarms=0
quiet_caught=0
: >"$dir/verdicts"
i=1
while [ "$i" -le "$pairs" ]; do
	for side in a b; do
		f="$dir/pair$i-$side.csv"
		[ -s "$f" ] || run_into "$f"
	done
	a="$dir/pair$i-a.csv"
	b="$dir/pair$i-b.csv"
	"$bin" compare "$@" "$a" "$b" >"$dir/pair$i.out" 2>&1
	rc=$?
	verdicts "$dir/pair$i.out" >>"$dir/verdicts"
	bad=$(verdicts "$dir/pair$i.out" | grep -vc '^ok$')
	calm=0
	if [ -f "$a.load" ] && [ -f "$b.load" ] &&
		awk -v x="$(cat "$a.load")" -v y="$(cat "$b.load")" -v q="${QUIET_CPUS:-0.1}" \
			'BEGIN { exit !(x < q && y < q) }'; then
		calm=1
		quiet=$((quiet + 1))
		[ "$bad" -ne 0 ] && quiet_alarms=$((quiet_alarms + 1))
	fi
	echo "noise.sh: pair $i: $bad cell(s) not ok; other processes kept" \
		"$(cat "$a.load" 2>/dev/null || echo ?) and $(cat "$b.load" 2>/dev/null || echo ?) CPUs busy"
	if [ "$rc" -ne 0 ] || [ "$bad" -ne 0 ]; then
		alarms=$((alarms + 1))
		echo "noise.sh: pair $i: a false alarm (exit $rc):"
		grep '^| [0-9]' "$dir/pair$i.out" | grep -v '| ok |$'; grep '^muonbench:' "$dir/pair$i.out"
	fi
	slow_apply "$b" "$dir/pair$i-slow.csv" || exit 2
	"$bin" compare "$@" "$a" "$dir/pair$i-slow.csv" >"$dir/pair$i-slow.out" 2>&1
	rc=$?
	stage=${plant%,*}
	variant=${plant#*,}
	if [ "$rc" -eq 1 ] && grep -q "^| $stage | $variant |.*| REGRESSION |$" "$dir/pair$i-slow.out"; then
		caught=$((caught + 1))
		quiet_caught=$((quiet_caught + calm))
	else
		echo "noise.sh: pair $i: the planted 25% slowdown of $plant's apply was missed (exit $rc):"
		grep "^| $stage | $variant |" "$dir/pair$i-slow.out"
	fi
	i=$((i + 1))
done
echo "noise.sh: $pairs pairs of identical runs ($run_args), compare $*:"
sort "$dir/verdicts" | uniq -c | awk '{ printf "  %s %s\n", $1, $2 }'
echo "noise.sh: $alarms pair(s) with a false alarm; the planted 25% slowdown of $plant's apply caught in $caught of $pairs"
echo "noise.sh: of the $quiet pair(s) that other processes left alone (under ${QUIET_CPUS:-0.1} CPUs busy): $quiet_alarms with a false alarm, the planted slowdown caught in $quiet_caught"
[ "$alarms" -eq 0 ] && [ "$caught" -eq "$pairs" ]

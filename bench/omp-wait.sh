#!/bin/sh
# The host optimizer under OpenMP's two ways of waiting, side by side.
#
# Runs the short cell of `make run` (tiny, one layer, ZeRO-2 master) ROUNDS
# times under each policy, alternately, and prints every run's host_opt_s
# and iter_mean_s, then their min / median / max per policy:
#   passive   muonbench's default (it sets OMP_WAIT_POLICY=passive itself)
#   spin      GOMP_SPINCOUNT=300000: libgomp's own default, what muonbench
#             did before (a waiting thread spins ~7 ms on a 2-core EPYC VM)
# With HOG=1 a busy shell loop holds the last CPU while the runs go on: what
# another process on a small shared machine does. The fast level of `spin`
# needs that core free; `passive` should not care.
#
# Usage: bench/omp-wait.sh [path/to/muonbench]   (from the repository root)
#        RUNS=5 ROUNDS=2 HOG=1 bench/omp-wait.sh build/muonbench
set -eu
bin=${1:-build/muonbench}
runs=${RUNS:-5}
rounds=${ROUNDS:-2}
tmp=$(mktemp -d)
hog=
cleanup() {
	[ -n "$hog" ] && kill "$hog" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT INT TERM

if [ "${HOG:-0}" = 1 ]; then
	last=$(($(getconf _NPROCESSORS_ONLN) - 1))
	taskset -c "$last" sh -c 'while :; do :; done' &
	hog=$!
	echo "hog: pid $hog busy on CPU $last"
fi

busy() { # jiffies all CPUs spent busy, and those of this shell's children
	awk '/^cpu / { print $2 + $3 + $4 + $7 + $8 + $9 }' /proc/stat
	sed 's/.*) //' /proc/$$/stat | awk '{ print $14 + $15 }'
}

cell() { # POLICY ROUND: one cell of RUNS runs into $tmp/POLICY-ROUND.csv
	case $1 in
	passive) set -- "$1" "$2" env -u GOMP_SPINCOUNT -u OMP_WAIT_POLICY ;;
	spin) set -- "$1" "$2" env -u OMP_WAIT_POLICY GOMP_SPINCOUNT=300000 ;;
	esac
	p=$1 r=$2
	shift 2
	set -- $(busy) $(date +%s.%N) "$@"
	b0=$1 c0=$2 t0=$3
	shift 3
	"$@" "$bin" run --model tiny --layers 1 --gather-budget 2Mi --seq 128 --stage 2 \
		--variant master --runs "$runs" --out "$tmp/$p-$r.csv" >/dev/null 2>"$tmp/err" ||
		{ cat "$tmp/err" >&2; exit 1; }
	set -- $(busy) $(date +%s.%N)
	# CPUs kept busy by other processes while the cell ran
	awk -v b=$(($1 - b0)) -v c=$(($2 - c0)) -v t="$3" -v t0="$t0" -v hz="$(getconf CLK_TCK)" \
		'BEGIN { printf "%.2f\n", (b - c) / hz / (t - t0) }' >"$tmp/$p-$r.other"
}

r=1
while [ "$r" -le "$rounds" ]; do
	cell spin "$r"
	cell passive "$r"
	r=$((r + 1))
done

for p in spin passive; do
	echo "== $p (CPUs busy with other processes, per cell: $(cat "$tmp/$p"-*.other | tr '\n' ' '))"
	cat "$tmp/$p"-*.csv | awk -F, '
		$1 == "format_version" { for (i = 1; i <= NF; i++) c[$i] = i; next }
		{ printf "  run %2d  host_opt_s %.5f  host_opt_gbs %6.2f  iter_mean_s %.4f\n",
			++n, $c["host_opt_s"], $c["host_opt_gbs"], $c["iter_mean_s"] }' |
		tee "$tmp/$p.txt"
	for f in host_opt_s iter_mean_s; do
		awk -v f=$f '{ for (i = 1; i < NF; i++) if ($i == f) print $(i + 1) }' "$tmp/$p.txt" |
			sort -g | awk -v f=$f -v p=$p '{ v[NR] = $1 }
			END { m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
			      printf "  %-7s %-11s min %.5f  median %.5f  max %.5f  (%d runs)\n",
				p, f, v[1], m, v[NR], NR }'
	done
done

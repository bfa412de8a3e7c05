#!/bin/sh
# Are the timings stable from run to run? Runs `run RUN_ARGS` (make
# stability: make run's cells) N times in a row (default 10) and prints, per cell, the
# coefficient of variation of the Muon apply's run means within each
# invocation (the largest of them) and across the invocations (of each
# invocation's mean), the CV across the invocations of the cell's fastest
# measured step (compare --estimate fastest's figure), and the host
# optimizer's median and largest figure
# (the two-level timings of issue 17 were a jump of host_opt_s from 0.0015 s
# to 0.11 s). The load of the machine is printed before each invocation,
# since other processes move every timing, and bench/cpu-levels.sh's loop on
# all CPUs before the first and after the last: on a host whose own speed
# moves (a CV of 10% or more, slowest / fastest of 1.5 and more) no cell can
# be steadier than that. After each invocation, how long it took and how
# many CPUs' worth it got (its CPU time over the clock): one that got fewer
# than its neighbours ran on less of the machine. A cell whose CV within an
# invocation reaches LIMIT percent (default 10) gets a line naming its slowest
# run, when it ran, and the CV without it: a slow spell of a shared host (a few
# seconds, every cell of one round) reads as one run at 1.5-2x and a CV of 2-5%
# without it. Exits 1 when a CV reaches LIMIT.
# Usage: RUN_ARGS='...' tests/stability.sh BIN DIR   (N=10 LIMIT=10 in the environment;
# make stability passes the Makefile's RUN_CELLS, make run's)
set -u
bin=$1
dir=$2
n=${N:-10}
limit=${LIMIT:-10}
run_args=${RUN_ARGS:?stability.sh: RUN_ARGS, the run options to repeat (make stability passes make run\'s)}
mkdir -p "$dir" || exit 2
# the machine's own speed, with muonbench out of the picture (bench/cpu-levels.sh):
# a CV within a run cannot be smaller than the host's levels allow
levels="$(dirname "$0")/../bench/cpu-levels.sh"
machine() { # WHEN
	[ -x "$levels" ] && SAMPLES=20 "$levels" 2>/dev/null | sed -n "s/^all \(.*\)/stability.sh: $1, a fixed loop on all \1/p"
}
# the CPU time of the waited-for children (this shell's cutime + cstime) and the clock,
# to say how many CPUs' worth each invocation got: a VM that gives a run one CPU
# of two slows every cell of it, which muonbench cannot see from inside
ticks=$(getconf CLK_TCK)
used() {
	awk -v now="$(date +%s.%N)" '{ print $16 + $17, now }' "/proc/$$/stat"
}
ran=
i=1
while [ "$i" -le "$n" ]; do
	f="$dir/run$i.csv"
	if [ ! -s "$f" ]; then
		[ "$ran" ] || machine "before the runs"
		ran=1
		echo "stability.sh: run $i of $n, load average $(cut -d' ' -f1-3 /proc/loadavg)"
		t0=$(used)
		# shellcheck disable=SC2086 # the arguments are a list
		"$bin" run $run_args --out "$f" >"$dir/run.out" 2>&1 || {
			cat "$dir/run.out"
			exit 2
		}
		echo "$t0 $(used)" | awk -v hz="$ticks" -v i="$i" '{ wall = $4 - $2
			printf "stability.sh: run %d took %.0f s with %.2f CPUs'"'"' worth (its CPU time over the clock)\n", i, wall, (wall > 0 ? ($3 - $1) / hz / wall : 0) }'
	fi
	i=$((i + 1))
done
[ "$ran" ] && machine "after the runs"
awk -F, -v limit="$limit" '
	$1 == "format_version" { for (i = 1; i <= NF; i++) c[$i] = i; name[++file] = FILENAME; next }
	$c["status"] == "ok" {
		k = $c["stage"] " " $c["variant"]
		if (!(k in seen)) { seen[k] = 1; order[++ncells] = k }
		a = $c["apply_mean_s"]
		s[k, file] += a; q[k, file] += a * a; m[k, file]++
		if (a > top[k, file]) { top[k, file] = a; topat[k, file] = "run " $c["run"] " at " $c["timestamp_utc"] }
		h[k, ++nh[k]] = $c["host_opt_s"]
		# the fastest measured step of the cell in this invocation (compare'"'"'s estimate)
		ns = split($c["apply_samples_s"], st, ";")
		for (i = $c["measure_first"]; i <= $c["measure_last"] && i <= ns; i++)
			if (!((k, file) in fast) || st[i] + 0 < fast[k, file]) fast[k, file] = st[i] + 0
	}
	function cv(sum, sq, n,   mean, var) {
		if (n < 2) return 0
		mean = sum / n; var = (sq - n * mean * mean) / (n - 1)
		return var > 0 ? 100 * sqrt(var) / mean : 0
	}
	END {
		printf "| ZeRO | Variant | apply CV within a run, largest (%%) | apply CV across %d runs (%%) | fastest apply step, CV across the runs (%%) | host_opt_s median | host_opt_s max |\n", file
		print "|---|---|---|---|---|---|---|"
		for (j = 1; j <= ncells; j++) {
			k = order[j]; worst = 0; S = 0; Q = 0; N = 0; FS = 0; FQ = 0; FN = 0
			for (f = 1; f <= file; f++) {
				if (!m[k, f]) continue
				w = cv(s[k, f], q[k, f], m[k, f]); if (w > worst) worst = w
				# where a CV past the limit comes from: its slowest run (when, and against
				# the mean), and the CV without it (a slow spell of the host is one round)
				if (w >= limit)
					past[++npast] = sprintf("%s %s in %s: %.1f%%, %.1f%% without its slowest, %s, %.2f x its mean", substr(k, 1, 1), substr(k, 3), name[f], w, cv(s[k, f] - top[k, f], q[k, f] - top[k, f] * top[k, f], m[k, f] - 1), topat[k, f], top[k, f] * m[k, f] / s[k, f])
				mean = s[k, f] / m[k, f]; S += mean; Q += mean * mean; N++
				if ((k, f) in fast) { FS += fast[k, f]; FQ += fast[k, f] * fast[k, f]; FN++ }
			}
			across = cv(S, Q, N)
			nn = nh[k]
			for (x = 1; x <= nn; x++) v[x] = h[k, x]
			for (x = 2; x <= nn; x++) for (y = x; y > 1 && v[y - 1] > v[y]; y--) { t = v[y]; v[y] = v[y - 1]; v[y - 1] = t }
			med = nn % 2 ? v[(nn + 1) / 2] : (v[nn / 2] + v[nn / 2 + 1]) / 2
			printf "| %s | %s | %.1f | %.1f | %.1f | %.5f | %.5f |\n", substr(k, 1, 1), substr(k, 3), worst, across, cv(FS, FQ, FN), med, v[nn]
			if (worst >= limit || across >= limit) bad++
		}
		for (j = 1; j <= npast; j++)
			print "stability.sh: within a run, ZeRO-" past[j]
		printf "stability.sh: %d of %d cells with a CV of %d%% or more\n", bad, ncells, limit
		exit bad ? 1 : 0
	}' "$dir"/run*.csv

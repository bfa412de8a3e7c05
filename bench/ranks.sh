#!/bin/sh
# Host contention by rank count (docs/mpi.md): 1, 2 and 4 ranks of the tiny
# model's master and both, under mpirun on this host (oversubscribed where it
# has fewer cores), and the host's memcpy bandwidth (muonbench bandwidth);
# prints the slowest rank's apply time per rank count, and each as a ratio to
# one rank. Usage: bench/ranks.sh [path/to/muonbench] [RANKS...]
set -eu
bin=${1:-build/muonbench}
shift 2>/dev/null || true
ranks=${*:-1 2 4}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
root=""
[ "$(id -u)" -ne 0 ] || root=--allow-run-as-root
export OMPI_MCA_btl="self,vader" OMPI_MCA_btl_vader_single_copy_mechanism=none
cells="--model tiny --layers 1 --fwd-bwd off --gather-budget 2Mi --profile off --stage 2 \
--variant master,both --runs 3 --steps 4 --measure 2-4 --quiet"

"$bin" bandwidth --format csv >"$tmp/bw.csv" 2>/dev/null || true
memcpy=$(python3 -c 'import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
v = [float(r[k]) for r in rows for k in r if k and "memcpy" in k and r[k]]
print(max(v) if v else "nan")' "$tmp/bw.csv" 2>/dev/null || echo nan)

for w in $ranks; do
	# shellcheck disable=SC2086 # lists of options
	mpirun -n "$w" --oversubscribe $root "$bin" run $cells --out "$tmp/w$w.csv" \
		>/dev/null 2>"$tmp/w$w.err" || { cat "$tmp/w$w.err" >&2; exit 1; }
done
python3 - "$tmp" "$memcpy" $ranks <<'PY'
import csv, sys
tmp, memcpy, ranks = sys.argv[1], sys.argv[2], [int(w) for w in sys.argv[3:]]
res = {}
for w in ranks:
    rows = [r for r in csv.DictReader(open(f"{tmp}/w{w}.csv")) if r["status"] == "ok"]
    for v in ("master", "both"):
        # per run, the slowest rank's apply (the ranks are in lockstep); the mean over runs
        runs = {}
        for r in rows:
            if r["variant"] == v:
                runs.setdefault(r["run"], []).append(float(r["apply_mean_s"]))
        res[w, v] = sum(max(a) for a in runs.values()) / len(runs)
        res[w, v, "memcpy"] = sum(float(r["memcpy_gbs"]) for r in rows if r["variant"] == v) / max(1, sum(1 for r in rows if r["variant"] == v))
print(f"host memcpy (muonbench bandwidth): {memcpy} GB/s")
print("| ranks | master apply (s) | vs 1 rank | both apply (s) | vs 1 rank | per-rank memcpy in the runs (GB/s) | vs 1 rank |")
print("|---|---|---|---|---|---|---|")
b = ranks[0]
for w in ranks:
    print(f"| {w} | {res[w,'master']:.4f} | {res[w,'master']/res[b,'master']:.2f} | "
          f"{res[w,'both']:.4f} | {res[w,'both']/res[b,'both']:.2f} | "
          f"{res[w,'master','memcpy']:.1f} | {res[w,'master','memcpy']/res[b,'master','memcpy']:.2f} |")
PY

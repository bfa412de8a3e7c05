#!/bin/sh
# The documentation tells the truth (issue 36, item 5), in TAP:
#  1. every muonbench command in README.md's examples (its fenced blocks, and
#     its inline `build/muonbench ...` spans) runs on the CPU device, in a
#     scratch directory that sees the repository's results/, configs/,
#     tests/ and profiles/: `run` on the tiny model cut to one layer, one run
#     of two steps (appended options win: the last given counts); `profile`
#     and `tune`, which take minutes, as --help; `--device NAME`,
#     `--cpus`/`--membind` of a GPU host mapped to this one. `make` lines
#     name targets and variables the Makefile has;
#  2. every --option named in README.md and docs/*.md is an option of some
#     command's --help, and every option of an example is one of its own
#     command's;
#  3. the GPU results in results/gpu/ are read: report takes every results
#     file there, and predict --profile h200-2026-12-04's profile.
# Usage: tests/docs.sh BUILD/muonbench [DOC...]   (default: README.md docs/*.md)
set -u
bin=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
shift
readme=README.md
if [ $# -gt 0 ]; then
	readme=$1
	docs="$*"
else
	docs="README.md $(ls docs/*.md)"
fi
repo=$(pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=0
failed=0
# shellcheck source=tests/tap.sh
. tests/tap.sh

commands="run plan devices ns bandwidth tune report compare plot predict profile advise"

# The options each command's --help defines (lines '  --name ...'), and their union.
for c in $commands; do
	"$bin" "$c" --help 2>/dev/null | sed -n 's/^  \(--[a-z0-9][a-z0-9-]*\).*/\1/p' | sort -u >"$tmp/opts.$c"
done
cat "$tmp"/opts.* | sort -u >"$tmp/opts.all"

# Options of other programs that the docs name beside muonbench's (the
# launchers' in docs/mpi.md: mpirun's and srun's).
foreign="--threads --usecase --bind-to --hostfile --map-by --mpi --ntasks-per-node --oversubscribe"

# 1. The README's example commands, one a line: fenced blocks (```sh or bare;
# backslash continuations joined, comments cut), and inline spans.
awk '
	/^```/ {
		if (infence) { infence = 0; next }
		lang = substr($0, 4); infence = (lang == "" || lang == "sh") ? 1 : 2; next
	}
	infence == 1 {
		line = $0
		while (line ~ /\\$/ && (getline more) > 0) { sub(/\\$/, "", line); line = line " " more }
		sub(/[ \t]+#.*$/, "", line)
		if (line ~ /^(build\/)?muonbench |^make( |$)/) print FILENAME ":" FNR "\t" line
		next
	}
	infence == 0 {
		rest = $0
		while (match(rest, /`(build\/)?muonbench [^`]*`/)) {
			print FILENAME ":" FNR "\t" substr(rest, RSTART + 1, RLENGTH - 2)
			rest = substr(rest, RSTART + RLENGTH)
		}
	}
' "$readme" >"$tmp/examples"

# The scratch directory the examples run in.
work=$tmp/work
mkdir -p "$work/build" "$work/results"
ln -s "$bin" "$work/build/muonbench"
for d in configs tests profiles; do ln -s "$repo/$d" "$work/$d"; done
for f in "$repo"/results/*; do ln -s "$f" "$work/results/"; done

tiny="--model tiny --layers 1 --fwd-bwd off --runs 1 --steps 2 --measure 2-2 --profile off --quiet"
while IFS='	' read -r where cmd; do
	case $cmd in
	make*)
		bad=""
		for w in ${cmd#make}; do
			case $w in
			*=*) grep -q "${w%%=*}" Makefile || bad="$bad $w" ;;
			*) grep -q "^$w:" Makefile || bad="$bad $w" ;;
			esac
		done
		if [ -z "$bad" ]; then
			report ok "$where: $cmd"
		else
			report fail "$where: $cmd" "not in the Makefile:$bad"
		fi
		continue
		;;
	esac
	# A placeholder (COMMAND, FILE) is not a command to run.
	if printf '%s\n' "$cmd" | grep -q '\b[A-Z][A-Z]\{2,\}\b'; then
		continue
	fi
	# shellcheck disable=SC2086 # the words of the command
	set -- $cmd
	shift
	sub=run
	case " $commands " in *" ${1:-} "*) sub=$1 ;; esac
	# Its options, each in its command's --help.
	bad=""
	for o in $(printf '%s\n' "$cmd" | grep -o -- '--[a-z][a-z0-9-]*'); do
		grep -qx -- "$o" "$tmp/opts.$sub" || bad="$bad $o"
	done
	if [ -n "$bad" ]; then
		report fail "$where: $cmd" "not an option of muonbench $sub:$bad"
		continue
	fi
	# How it runs here.
	line=$(printf '%s\n' "$cmd" | sed -e 's/^\(build\/\)\{0,1\}muonbench /build\/muonbench /' \
		-e "s/--device [^ ]*//; s/--cpus [0-9,-]*/--cpus 0/; s/--membind [0-9,-]*/--membind 0/")
	want=0
	case $sub in
	run) line="$line $tiny" ;;
	profile | tune) line="build/muonbench $sub --help" ;;
	ns) line="$line --reps 1" ;;
	bandwidth) line="$line --reps 1" ;;
	compare) want=1 ;; # a verdict either way: 0 or 1 (2: it could not compare)
	esac
	(cd "$work" && sh -c "$line") >"$tmp/out" 2>"$tmp/err" </dev/null
	rc=$?
	if [ "$rc" -eq 0 ] || { [ "$want" -eq 1 ] && [ "$rc" -eq 1 ]; }; then
		report ok "$where: $cmd"
	else
		report fail "$where: $cmd" "ran as: $line
exit $rc; stderr: $(tail -3 "$tmp/err")"
	fi
done <"$tmp/examples"

# 2. Every option the docs name exists.
for f in $docs; do
	bad=""
	for o in $(grep -o -- '--[a-z][a-z0-9-]*' "$f" | sort -u); do
		case " $foreign " in *" $o "*) continue ;; esac
		grep -qx -- "$o" "$tmp/opts.all" || bad="$bad $o"
	done
	if [ -z "$bad" ]; then
		report ok "$f: every option it names exists"
	else
		report fail "$f: every option it names exists" "in no command's --help:$bad"
	fi
done

# 3. The GPU results in the repository are read.
gpu=results/gpu/h200-2026-12-04
for f in results/gpu/*/*.csv; do
	head -c 15 "$f" | grep -q '^format_version' || continue # ns's, nvidia-smi's, PyTorch's
	if "$bin" report "$f" >"$tmp/out" 2>"$tmp/err" && grep -q "NVIDIA H200" "$tmp/out"; then
		report ok "report reads $f"
	else
		report fail "report reads $f" "$(cat "$tmp/err")"
	fi
done
if "$bin" predict --profile "$gpu/profile.json" --model qwen3-4b --stage 2 --variant master,both \
	>"$tmp/out" 2>"$tmp/err" && grep -q "Profile 'NVIDIA H200'" "$tmp/out"; then
	report ok "predict --profile $gpu/profile.json"
else
	report fail "predict --profile $gpu/profile.json" "$(cat "$tmp/err")"
fi

echo "1..$n"
[ "$failed" -eq 0 ]

#!/bin/sh
# Commands do not call commands: a command's object (cmd/X.c, one that
# defines an mb_cmd_ function) refers to no symbol that another command's
# object defines. What two commands share lives in lib/ or in a shared
# helper under cmd/ (options, args, help, setup, print, tables, child, and ranks, run's
# MPI hooks, which any command could call; run_rows and run_watchdog, run's results rows
# and its signals, are helpers too, as any object without an mb_cmd_ is), never in a
# command. Also: the check sees every command (each has its mb_cmd_), and
# no helper defines one. And the library's floors: no file of lib/ outside
# lib/cl/ includes a header of lib/cl/ (the OpenCL module), and no header
# name is in both (the build looks in both folders); the check is shown to
# catch an include planted in a copy of lib/. Prints TAP.
# Usage: tests/commands.sh path/to/muonbench   (its objects beside it, in cmd/)
set -u
bin=$1
objs=$(dirname "$bin")/cmd
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=0
failed=0
. tests/tap.sh

# NAME.def and NAME.use: the symbols each object defines and refers to
for o in "$objs"/*.o; do
	name=$(basename "$o" .o)
	nm "$o" | awk '$2 ~ /^[TDBR]$/ { print $3 }' | sort >"$tmp/$name.def"
	nm "$o" | awk '$1 == "U" { print $2 }' | sort >"$tmp/$name.use"
done
commands=$(grep -l '^mb_cmd_' "$tmp"/*.def | xargs -n1 basename | sed 's/\.def$//' | sort)
want=$(sed -n 's/^int mb_cmd_\([a-z]*\)(.*/\1/p' cmd/commands.h | sort)
if [ "$commands" = "$want" ]; then
	report ok "commands: each command of commands.h is an object of its own"
else
	report fail "commands: each command of commands.h is an object of its own" \
		"objects defining mb_cmd_: $(echo $commands); commands.h: $(echo $want)"
fi

calls=""
for a in $commands; do
	for b in $commands; do
		[ "$a" = "$b" ] && continue
		shared=$(comm -12 "$tmp/$a.use" "$tmp/$b.def" | tr '\n' ' ')
		[ -z "$shared" ] || calls="$calls${calls:+
}$a -> $b: $shared"
	done
done
if [ -z "$calls" ]; then
	report ok "commands: no command calls a function that another command defines"
else
	report fail "commands: no command calls a function that another command defines" "$calls"
fi

# The includes of DIR/*.[ch] (the part of lib/ outside lib/cl/) that name
# a header of DIR/cl/, "file: header" a line; and the header names in both.
upward() {
	for f in "$1"/*.c "$1"/*.h; do
		sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f" |
			while read -r inc; do
				[ -f "$1/cl/$(basename "$inc")" ] && echo "$f: $inc"
			done
	done
	for h in "$1"/cl/*.h; do
		[ -f "$1/$(basename "$h")" ] && echo "$h: also $1/$(basename "$h")"
	done
}
found=$(upward lib)
if [ -z "$found" ]; then
	report ok "layers: nothing in lib/ outside lib/cl/ includes a lib/cl/ header"
else
	report fail "layers: nothing in lib/ outside lib/cl/ includes a lib/cl/ header" "$found"
fi
mkdir "$tmp/lib" && cp -R lib/. "$tmp/lib/"
sed -i 's|^#include "mb_plan.h"$|#include "mb_plan.h"\n#include "mb_cl.h"|' "$tmp/lib/mb_sched.h"
printf '#include "cl/mb_ledger.h"\n' >>"$tmp/lib/mb_stats.c"
found=$(upward "$tmp/lib")
if echo "$found" | grep -q 'mb_sched.h: mb_cl.h$' && echo "$found" | grep -q 'mb_stats.c: cl/mb_ledger.h$'; then
	report ok "layers: the check finds a planted include of a lib/cl/ header"
else
	report fail "layers: the check finds a planted include of a lib/cl/ header" "found: $found"
fi

echo "1..$n"
[ "$failed" -eq 0 ]

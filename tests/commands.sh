#!/bin/sh
# Commands do not call commands: a command's object (cmd/X.c, one that
# defines an mb_cmd_ function) refers to no symbol that another command's
# object defines. What two commands share lives in lib/ or in a shared
# helper under cmd/ (options, setup, print, tables, child, and ranks, run's
# MPI hooks, which any command could call), never in a command. Also: the check sees every command (each has its mb_cmd_), and
# no helper defines one. Prints TAP.
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

echo "1..$n"
[ "$failed" -eq 0 ]

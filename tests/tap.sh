# TAP helpers for the shell tests, sourced after they set $bin (the
# muonbench binary), $tmp (a scratch directory), n=0 and failed=0.

report() { # STATUS NAME [DETAIL]
	n=$((n + 1))
	if [ "$1" = ok ]; then
		echo "ok $n - $2"
	else
		failed=$((failed + 1))
		echo "not ok $n - $2"
		[ -z "${3:-}" ] || printf '%s\n' "$3" | sed 's/^/#   /'
	fi
}

# expect_error NAME STATUS MESSAGE ARGS...: the command exits STATUS, writes
# nothing to stdout and exactly one line to stderr, which contains MESSAGE.
expect_error() {
	name=$1 want=$2 msg=$3
	shift 3
	"$bin" "$@" >"$tmp/out" 2>"$tmp/err"
	rc=$?
	lines=$(wc -l <"$tmp/err")
	if [ "$rc" -ne "$want" ]; then
		report fail "$name" "exit $rc, want $want; stderr: $(cat "$tmp/err")"
	elif [ -s "$tmp/out" ] || [ "$lines" -ne 1 ]; then
		report fail "$name" "want one line on stderr and nothing on stdout, got: $(cat "$tmp/out" "$tmp/err")"
	elif ! grep -qF -- "$msg" "$tmp/err"; then
		report fail "$name" "stderr: $(cat "$tmp/err")
want: $msg"
	else
		report ok "$name"
	fi
}

# expect_output NAME TEXT ARGS...: the command exits 0 and stdout contains TEXT.
expect_output() {
	name=$1 text=$2
	shift 2
	"$bin" "$@" >"$tmp/out" 2>"$tmp/err"
	rc=$?
	if [ "$rc" -ne 0 ]; then
		report fail "$name" "exit $rc: $(cat "$tmp/err")"
	elif ! grep -qF -- "$text" "$tmp/out"; then
		report fail "$name" "no '$text' in: $(head -20 "$tmp/out")"
	else
		report ok "$name"
	fi
}

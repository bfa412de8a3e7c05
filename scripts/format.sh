#!/bin/sh
# The C sources in the project's .clang-format (Linux style): with --check,
# list each file that clang-format would change and fail (make test); else
# format them in place (make format). clang-format 14 is what .clang-format
# is written for (scripts/deps.sh installs it in CI); with none, or another
# version, whose output differs, the check is skipped with a note.
set -eu
cd "$(dirname "$0")/.."
files="cmd/*.[ch] lib/*.[ch] lib/cl/*.[ch] tests/*.[ch] tests/fuzz/*.c"
cf=""
for c in clang-format-14 clang-format; do
	if command -v "$c" >/dev/null 2>&1 && "$c" --version | grep -q 'version 14\.'; then
		cf=$c
		break
	fi
done
if [ -z "$cf" ]; then
	echo "muonbench: format check skipped: no clang-format 14 (install clang-format)" >&2
	exit 0
fi
if [ "${1:-}" != --check ]; then
	# shellcheck disable=SC2086 # $files is a list of globs
	exec "$cf" -i $files
fi
bad=""
# shellcheck disable=SC2086 # $files is a list of globs
for f in $files; do
	"$cf" --dry-run -Werror "$f" >/dev/null 2>&1 || bad="$bad $f"
done
if [ -n "$bad" ]; then
	echo "muonbench: not in .clang-format's style (make format fixes them):$bad" >&2
	exit 1
fi
echo "format: every C file in .clang-format's style"

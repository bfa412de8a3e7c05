#!/bin/sh
# Make sure the Debian packages muonbench builds and tests with are installed,
# and any more given as arguments (make fuzz adds clang's). Missing ones are
# installed with apt-get when run as root; otherwise this prints the exact
# command to run and fails. Quiet when all is there.
set -eu

PACKAGES="gcc libc6-dev pkgconf ocl-icd-opencl-dev opencl-headers pocl-opencl-icd clinfo \
libclblast-dev clblast-utils libnuma-dev numactl libcjson-dev libcmocka-dev gnuplot-nox"
PKGCONFIG_MODULES="OpenCL clblast numa libcjson cmocka"
PACKAGES="$PACKAGES $*"

if ! command -v dpkg-query >/dev/null 2>&1; then
	# Not Debian: all we can check is that the libraries are findable.
	if command -v pkg-config >/dev/null 2>&1 &&
		pkg-config --exists $PKGCONFIG_MODULES; then
		exit 0
	fi
	echo "muonbench: this is not a Debian-based system; install the development" >&2
	echo "files of OpenCL (ICD loader and headers), CLBlast, libnuma, cJSON and cmocka," >&2
	echo "an OpenCL driver (PoCL for the CPU), and pkg-config (modules: $PKGCONFIG_MODULES)" >&2
	exit 1
fi

missing=""
for p in $PACKAGES; do
	status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
	case "$status" in
	*"install ok installed"*) ;;
	*) missing="$missing $p" ;;
	esac
done
[ -z "$missing" ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
	echo "muonbench: missing packages:$missing" >&2
	echo "run: sudo apt-get install -y$missing" >&2
	exit 1
fi
echo "muonbench: installing missing packages:$missing" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# shellcheck disable=SC2086 # the list is meant to split into words
apt-get install -y -qq $missing >/dev/null

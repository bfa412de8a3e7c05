#!/bin/sh
# Write the man page of muonbench from its own --help, so that the page and
# the option table cannot disagree. Usage: scripts/manpage.sh BIN VERSION
set -eu
bin=$1
version=$2

# Help text as literal roff: escape backslashes and leading dots and quotes.
literal() {
	echo ".nf"
	sed -e 's/\\/\\e/g' -e "s/^\([.']\)/\\\\\&\1/"
	echo ".fi"
}

cat <<EOF2
.TH MUONBENCH 1 "" "muonbench $version" "User Commands"
.SH NAME
muonbench \- benchmark the CPU-offload data path of the Muon optimizer
.SH SYNOPSIS
.B muonbench
[\fIrun\fR] [\fIoptions\fR]
.br
.B muonbench plan
[\fIoptions\fR]
.br
.B muonbench predict
[\fIoptions\fR]
.br
.B muonbench devices
.br
.B muonbench ns
[\fIoptions\fR]
.br
.B muonbench bandwidth
[\fIoptions\fR]
.br
.B muonbench tune
[\fIoptions\fR]
.br
.B muonbench report
[\fIoptions\fR] \fIFILE.csv\fR...
.br
.B muonbench compare
[\fIoptions\fR] \fIBASE.csv NEW.csv\fR
.br
.B muonbench plot
\fIFILE.csv\fR... \fB-o\fR \fIIMAGE\fR
.SH DESCRIPTION
muonbench replays, without a training framework, what one rank of a ZeRO
training job does each step when the Muon optimizer's state lives in host
memory and Newton\-Schulz runs on an OpenCL device: gradients and momentum
to the device, orthogonalization, update and momentum back, the host
optimizer step, parameters back. It measures what pinned host memory and
overlapped copies are worth, on your device and host.
.SH COMMANDS
EOF2
# the commands, as --help lists them: "  NAME  summary" lines after "commands:"
for c in $("$bin" --help | sed -n '/^commands:/,/^$/s/^  \([a-z]*\) .*/\1/p'); do
	echo ".SS $c"
	# run's help begins with the list of commands, which COMMANDS is already
	"$bin" "$c" --help | sed -n "/^usage: muonbench $c /,\$p" | literal
done
cat <<'EOF2'
.SH EXIT STATUS
.TP
.B 0
success
.TP
.B 1
a run failed (device, driver or host resources), the driver gave no time for a
phase (the rows are kept, those times empty), the output could not be written
once the run began, or compare found a regression
.TP
.B 2
nothing ran: bad usage or bad input (an option, a value, a model config, a
results file; the message names it), an \-\-out that cannot be opened, no
OpenCL platform
.SH ENVIRONMENT
.TP
.B OCL_ICD_VENDORS
where the OpenCL ICD loader looks for drivers (see
.BR clinfo (1)).
.TP
.B XDG_CACHE_HOME
where the CLBlast tunings and their verdicts are cached (muonbench/ below it;
default ~/.cache).
.TP
.B MUONBENCH_SHIPPED_TUNINGS
off: --tuning auto leaves the shipped tunings out (the cache's alone).
.TP
.B MUONBENCH_PROFILING
off: the queues are made without profiling, so every event time is refused,
as some drivers do; run, ns and bandwidth then show n/a and exit 1 (for tests).
.TP
.B OMP_WAIT_POLICY, GOMP_SPINCOUNT
when neither is set, muonbench runs itself again with OMP_WAIT_POLICY=passive,
so that OpenMP's threads sleep between parallel regions.
.TP
.B TMPDIR
where tune's work, the tuning checks and a fallback results file go (default /tmp).
.SH SEE ALSO
.BR clinfo (1),
.BR numactl (8).
The docs/ folder of the source tree documents the model config formats, the results file and the plan.
EOF2

#!/bin/bash
# The device check of Newton-Schulz's tensor-core kernel (issue 42), one call
# of about six minutes on an NVIDIA GPU, beside the PyTorch peer.
#
# On this machine, from the project root:
#   ../shared/gpu-kit/prepare.sh && bash scripts/gpu-ns.sh prepare
# (the first puts muonbench, its libraries and the peer into .devlibs/, which
# git ignores; the second adds the kernel's test and the script). Then the
# device call: command "bash .devlibs/gpu-ns.sh", carry [".devlibs"],
# timeout_s 480. Results under $OUT (default /tmp/mbout), seven files:
#   log.txt   everything, with which kernel path ran and why (mma with
#             ldmatrix, with cp.async, with the fragments read one by one,
#             or portable; ptxas's registers) and the kernel's own tests on
#             the real mma path
#   tune-ns.md    tune --ns on the same shapes: every tile checked and timed
#             by GEMM size, and the tiles stored
#   tuning.json   the tuning it stored (ns_gemm): to commit under tuning/
#   ns-default.csv  fp16 Newton-Schulz on 4096x4096 and 2560x9728 at the
#             default tile (--tuning off), beside ns.csv's tuned one
#   ns.csv    Newton-Schulz and its GEMMs alone, fp32/fp16/bf16, on 4096x4096
#             (the GEMMs alone are 4096^3) and Qwen3-4B's shapes, beside the
#             peer's (ns --peer: its median and our rate over its rate), at
#             the tuned tiles
#   torch.csv the PyTorch peer: the same shapes' Newton-Schulz, and the apply
#             of master and both on the first LAYERS layers
#   run.csv   muonbench at defaults (the tuned tiles) on the same layers,
#             ZeRO-2, master and both
# Every command runs under timeout -k: a process stuck in a driver call
# ignores SIGTERM.
set -u
D=$PWD/.devlibs
if [ "${1:-}" = prepare ]; then
	[ -x "$D/muonbench" ] || { echo "run ../shared/gpu-kit/prepare.sh first"; exit 2; }
	make -s build/tests/test_gemm16 || exit 1
	cp build/tests/test_gemm16 scripts/gpu-ns.sh "$D/"
	cp -L "$(ldconfig -p | awk '$1 == "libcmocka.so.0" {print $NF; exit}')" "$D/" || exit 1
	du -sh "$D"
	echo 'next: device run, command "bash .devlibs/gpu-ns.sh", carry [".devlibs"], timeout_s 480'
	exit 0
fi
O=${OUT:-/tmp/mbout} M=$D/muonbench LAYERS=${LAYERS:-6} BUDGET=${BUDGET:-420}
SHAPES=4096x4096,2560x9728,1024x2560,4096x2560,9728x2560
mkdir -p "$O"
exec 3>&1 4>&2 > >(tee "$O/log.txt") 2>&1
TEE=$!
T0=$(date +%s)
el() { echo "== +$(($(date +%s) - T0))s $*"; }
# at most CAP seconds, and never past the budget less RESERVE
cap() {
	local l=$((BUDGET - ($(date +%s) - T0) - ${2:-0}))
	[ "$l" -lt "$1" ] && echo $((l > 5 ? l : 5)) || echo "$1"
}
el env
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv
NV=
for d in /usr/local/nvidia/lib64 /usr/lib/x86_64-linux-gnu /usr/lib64 /usr/local/cuda/compat; do
	[ -e "$d/libnvidia-opencl.so.1" ] && NV=$d/libnvidia-opencl.so.1 && break
done
[ -z "$NV" ] && NV=$(ldconfig -p | awk '/libnvidia-opencl\.so\.1/ {print $NF; exit}')
echo "NVIDIA OpenCL ICD: ${NV:-MISSING}"
if [ -n "$NV" ]; then
	mkdir -p /tmp/icd && echo "$NV" >/tmp/icd/nvidia.icd && export OCL_ICD_VENDORS=/tmp/icd
fi
export LD_LIBRARY_PATH=$D${NV:+:$(dirname "$NV")}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export XDG_CACHE_HOME=/tmp/mbcache
el path; timeout -k 5 "$(cap 45)" "$M" ns --verify --ns-precision fp16,bf16 --shape 256x768,1000x3000 --reps 2
el test_gemm16; timeout -k 5 "$(cap 80 300)" "$D/test_gemm16"; echo "rc=$?"
el peer; PYTHONUNBUFFERED=1 timeout -k 5 "$(cap 80 260)" python3 "$D/torch_peer.py" --layers "$LAYERS" \
	>"$O/torch.csv"; echo "rc=$?"
el tune; timeout -k 5 "$(cap 100 200)" "$M" tune --ns --shape "$SHAPES" --time-budget "$(cap 70 230)s" |
	tee "$O/tune-ns.md"
cp "$XDG_CACHE_HOME"/muonbench/clblast-*.json "$O/tuning.json"
el default; timeout -k 5 "$(cap 30 170)" "$M" ns --tuning off --ns-precision fp16 --shape 4096x4096,2560x9728 \
	--reps 3 --format csv | tee "$O/ns-default.csv"
el ns; timeout -k 5 "$(cap 70 110)" "$M" ns --ns-precision fp32,fp16,bf16 --shape "$SHAPES" --reps 3 \
	--peer "$O/torch.csv" --format csv | tee "$O/ns.csv"
el run; timeout -k 5 "$(cap 110 5)" "$M" run --model qwen3-4b --layers "$LAYERS" --stage 2 \
	--variant master,both --runs 2 --steps 4 --measure 2-4 --fwd-bwd off --quiet --out "$O/run.csv"
echo "rc=$?"
el finished
exec 1>&3 2>&4 # tee sees the end of its input: wait for it to write the log's last lines
wait "$TEE"

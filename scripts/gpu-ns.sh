#!/bin/bash
# The device check of Newton-Schulz's tensor-core kernel (issue 42), one call
# of about six minutes on an NVIDIA GPU, beside the PyTorch peer.
#
# On this machine, from the project root:
#   ../shared/gpu-kit/prepare.sh && bash scripts/gpu-ns.sh prepare
# (the first puts muonbench, its libraries and the peer into .devlibs/, which
# git ignores; the second adds the kernel's test and the script). Then the
# device call: command "bash .devlibs/gpu-ns.sh", carry [".devlibs"],
# timeout_s 480. Results under $OUT (default /tmp/mbout), five files:
#   log.txt   everything, with which kernel path ran and why (mma with
#             ldmatrix, mma with the fragments read one by one, or portable)
#             and the kernel's own tests on the real mma path
#   ns.csv    Newton-Schulz and its GEMMs alone, fp32/fp16/bf16, on 4096x4096
#             (the GEMMs alone are 4096^3) and Qwen3-4B's shapes, beside the
#             peer's (ns --peer: its median and our rate over its rate)
#   torch.csv the PyTorch peer: the same shapes' Newton-Schulz, and the apply
#             of master and both on the first LAYERS layers
#   run.csv   muonbench at defaults on the same layers, ZeRO-2, master and both
#   ns-tiles.csv  fp16 Newton-Schulz on 4096x4096 and 2560x9728 under each of
#             TILES (MUONBENCH_NS_TILE), each line led by its tile
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
el path; timeout -k 5 "$(cap 60)" "$M" ns --verify --ns-precision fp16,bf16 --shape 256x768,1000x3000 --reps 2
el test_gemm16; timeout -k 5 "$(cap 120 240)" "$D/test_gemm16"; echo "rc=$?"
el peer; PYTHONUNBUFFERED=1 timeout -k 5 "$(cap 100 200)" python3 "$D/torch_peer.py" --layers "$LAYERS" \
	>"$O/torch.csv"; echo "rc=$?"
el ns; timeout -k 5 "$(cap 90 170)" "$M" ns --ns-precision fp32,fp16,bf16 --shape "$SHAPES" --reps 5 \
	--peer "$O/torch.csv" --format csv | tee "$O/ns.csv"
el tiles; for t in ${TILES:-128x128x32/256/4 128x256x32/256/4 256x128x32/256/2 64x128x64/128/2 128x64x64/128/4}; do
	MUONBENCH_NS_TILE=$t timeout -k 5 "$(cap 30 120)" "$M" ns --ns-precision fp16 --shape 4096x4096,2560x9728 \
		--reps 3 --format csv | sed "s|^|$t,|" | tee -a "$O/ns-tiles.csv"
done
el run; timeout -k 5 "$(cap 120 5)" "$M" run --model qwen3-4b --layers "$LAYERS" --stage 2 \
	--variant master,both --runs 2 --steps 4 --measure 2-4 --fwd-bwd off --quiet --out "$O/run.csv"
echo "rc=$?"
el finished
exec 1>&3 2>&4 # tee sees the end of its input: wait for it to write the log's last lines
wait "$TEE"

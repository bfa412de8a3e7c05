#!/bin/bash
# This session's last GPU check: run at the framework's precision (auto: fp16 on mma) with
# NVIDIA's pinned allocation (auto: clCreateBufferNV), calibrated mode at PyTorch's rate.
set -u
D=$PWD/.devlibs O=${OUT:-/tmp/mbout} M=$PWD/.devlibs/muonbench
mkdir -p "$O"; exec > >(tee "$O/log.txt") 2>&1
T0=$(date +%s); el() { echo "== +$(($(date +%s) - T0))s $*"; }
NV=$(ls /usr/local/nvidia/lib64/libnvidia-opencl.so.1 /usr/lib/x86_64-linux-gnu/libnvidia-opencl.so.1 2>/dev/null | head -1)
mkdir -p /tmp/icd && echo "$NV" >/tmp/icd/nvidia.icd && export OCL_ICD_VENDORS=/tmp/icd
export LD_LIBRARY_PATH=$D:$(dirname "$NV") XDG_CACHE_HOME=/tmp/mbcache
L="--model qwen3-4b --layers 6 --stage 2 --runs 1 --steps 3 --measure 2-3 --fwd-bwd off --quiet --profile off"
el auto; timeout -k 5 90 "$M" run $L --variant all --out "$O/run-auto.csv"; echo "rc=$?"
el calibrated; timeout -k 5 50 "$M" run $L --variant master,pin,overlap,both --ns-rate 505000 --out "$O/run-calibrated.csv"; echo "rc=$?"
el ns; timeout -k 5 20 "$M" ns --ns-precision fp32,fp16 --shape 2560x9728 --reps 3 --format csv | tee "$O/ns.csv"
if [ $(($(date +%s) - T0)) -lt 95 ]; then
	el full-calibrated; timeout -k 5 $((185 - ($(date +%s) - T0))) "$M" --stage 2 --variant master,both --runs 1 --steps 2 --measure 2-2 \
		--quiet --profile off --ns-rate 505000 --out "$O/full-calibrated.csv"; echo "rc=$?"
fi
el done

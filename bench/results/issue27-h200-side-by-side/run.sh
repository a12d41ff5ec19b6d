#!/bin/bash
# The VRAM arena beside llama.cpp's --n-cpu-moe on an H200, one run per phase:
#   run.sh q4_0   the 30B-A3B shape in Q4_0 (make-model --preset 30b-a3b --stats-tokens 0)
#   run.sh mix    the same shape as a Q4_K_M-like mix (dense Q6_K, experts Q4_K)
# Each phase: llama-bench -ngl 99 --n-cpu-moe 0 / 24 / 36 -p 512 -n 128 -r 3, then strata bench
# --device cuda --mem 100 / 50 / 25 % (the share of the experts in the device arena, the rest in
# page-locked host memory) with the same prompt and decode lengths, one variant a process so that
# nvidia-smi's peak (vram.txt, MiB above what was used before) is one session's; and at 25 % once
# more with --cpu-experts auto. Carried in .device-carry: bin.tar.xz (bin/strata-b), lib.tar.xz
# (its libraries). LLAMA: a directory holding llama-bench and its libraries, built from
# node-llama-cpp 3.22.1's llama.cpp with -DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90
# -DGGML_BACKEND_DL=ON -DGGML_CPU_ALL_VARIANTS=ON -DGGML_NATIVE=OFF (default /tmp/llcuda).
set -u
R=$PWD
tar xJf .device-carry/bin.tar.xz -C "$R"
tar xJf .device-carry/lib.tar.xz -C .device-carry
L=${LLAMA:-/tmp/llcuda}
export LD_LIBRARY_PATH=$R/.device-carry/lib:${LD_LIBRARY_PATH:-}
W=/tmp/res-$1; mkdir -p $W; trap "tar cf $OUT/results-$1.tar -C $W ." EXIT
S=$R/bin/strata-b
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv > $W/gpu.txt 2>&1
M=/tmp/m30-$1.gguf
if [ "$1" = q4_0 ]; then types="--type q4_0"; else types="--type q6_k --expert-type q4_k"; fi
[ -f $M ] || ( time $S make-model --preset 30b-a3b $types --stats-tokens 0 -o $M ) > $W/make.txt 2>&1
ls -la $M >> $W/make.txt
. "$R/bench/with_vram.sh"
for n in 0 24 36; do
  with_vram llama-ncmoe$n env LD_LIBRARY_PATH=$L:$LD_LIBRARY_PATH timeout 150 \
    $L/llama-bench -m $M -ngl 99 --n-cpu-moe $n -p 512 -n 128 -r 3 -o json \
    > $W/llama-ncmoe$n.json 2> $W/llama-ncmoe$n.err
done
for v in "arena100:--mem 100%" "arena50:--mem 50%" "arena25:--mem 25%" "arena25-cpu-auto:--mem 25% --cpu-experts auto"; do
  tag=${v%%:*}; a=${v#*:}
  with_vram strata-$tag timeout 150 $S bench -m $M --device cuda $a --prompt-tokens 512 -n 128 -r 3 \
    -o $W/strata-$tag.json > $W/strata-$tag.md 2> $W/strata-$tag.err
done
cat $W/vram.txt

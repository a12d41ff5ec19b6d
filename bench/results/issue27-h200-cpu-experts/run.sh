#!/bin/bash
# The VRAM arena on an H200 with misses computed by the CPU from host memory (--cpu-experts),
# beside llama.cpp's --n-cpu-moe, on the synthetic 30B-A3B shape in Q4_0 and in a Q4_K_M-like mix
# (dense Q6_K, experts Q4_K). One phase per call of the device tool:
#   run.sh tests   the GPU tests and the logits of 12 tokens by sha256 (every expert in VRAM, 25 %
#                  arenas with --cpu-experts off / 2 / auto), then bench --cpu-experts off, 1, 2,
#                  4 and auto at a 25 % arena (-p 128 -n 64 -r 3)
#   run.sh side    Q4_0: llama-bench -ngl 99 --n-cpu-moe 0/24/36 -p 512 -n 128 -r 3 and strata
#                  bench --mem 100/50/25 % (--cpu-experts off and auto as variants), same shape
#   run.sh mix     the same for the Q4_K_M-like mix (--cpu-experts off and 2)
#   run.sh disk    the disk tier (--gpu-mem 6G, --mem 24G / 8G): 3 rounds of 64 tokens
# Binaries and libraries come in .device-carry (bin.tar.xz: strata, the golden tests and their
# data; lib.tar.xz; llama.tar.xz: llama-bench and its libraries); records go to $OUT.
set -u
R=$PWD
mkdir -p /work && ln -sfn "$R" /work/main
tar xJf .device-carry/bin.tar.xz -C "$R"
tar xJf .device-carry/lib.tar.xz -C .device-carry
export LD_LIBRARY_PATH=$R/.device-carry/lib:${LD_LIBRARY_PATH:-}
W=/tmp/res; mkdir -p $W; trap "tar cf $OUT/results.tar -C $W ." EXIT
S=$R/build/strata
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv > $W/gpu.txt 2>&1
M=/tmp/m30.gguf
K=/tmp/m30-mix.gguf
make_models() {
  [ -f $M ] || ( time $S make-model --preset 30b-a3b --type q4_0 --stats-tokens 0 -o $M ) > $W/make.txt 2>&1
  if [ "$1" = mix ] && [ ! -f $K ]; then
    ( time $S make-model --preset 30b-a3b --type q6_k --expert-type q4_k --stats-tokens 0 -o $K ) >> $W/make.txt 2>&1
  fi
  ls -la /tmp/*.gguf >> $W/make.txt
}
. "$R/bench/with_vram.sh"
llama() {  # model tag, N
  tar xJf .device-carry/llama.tar.xz -C /tmp 2>/dev/null
  with_vram llama-$1-ncmoe$2 env LD_LIBRARY_PATH=/tmp/llcuda:$LD_LIBRARY_PATH timeout 200 \
    /tmp/llcuda/llama-bench -m $3 -ngl 99 --n-cpu-moe $2 -p 512 -n 128 -r 3 -o json \
    > $W/llama-$1-ncmoe$2.json 2> $W/llama-$1-ncmoe$2.err
}
case "$1" in
tests)
  make_models q4_0
  (timeout 240 build/tests/strata_golden_tests --gtest_filter='GpuArena*:GpuCli*' 2>&1 | tail -60) > $W/gpu_tests.txt
  echo '[1, 200, 3000, 17, 5, 99, 1024, 8, 4000, 12, 640, 77]' > /tmp/tok.json
  for a in "" "--arena 25% --cpu-experts off" "--arena 25% --cpu-experts 2" "--arena 25% --cpu-experts auto"; do
    timeout 120 $S logits -m $M --device cuda --tokens /tmp/tok.json --prefill-chunk 1 --force --out /tmp/l.bin $a > /dev/null 2>> $W/logits.txt
    echo "'$a': rc $? $(sha256sum /tmp/l.bin | cut -c1-16)" >> $W/logits.txt
    rm -f /tmp/l.bin
  done
  timeout 280 $S bench -m $M --device cuda --mem 25% --cpu-experts off --cpu-experts 1 --cpu-experts 2 \
    --cpu-experts 4 --cpu-experts auto --prompt-tokens 128 -n 64 -r 3 -o $W/cpu25.json > $W/cpu25.md 2> $W/cpu25.err
  ;;
side)
  make_models q4_0
  for n in 0 24 36; do llama q4_0 $n $M; done
  for a in 100 50 25; do
    with_vram strata-q4_0-arena$a timeout 200 $S bench -m $M --device cuda --mem $a% --cpu-experts off \
      --cpu-experts auto --prompt-tokens 512 -n 128 -r 3 -o $W/strata-q4_0-arena$a.json \
      > $W/strata-q4_0-arena$a.md 2> $W/strata-q4_0-arena$a.err
  done
  ;;
mix)
  make_models mix
  for n in 0 24 36; do llama mix $n $K; done
  for a in 100 50 25; do
    with_vram strata-mix-arena$a timeout 200 $S bench -m $K --device cuda --mem $a% --cpu-experts off \
      --cpu-experts 2 --prompt-tokens 512 -n 128 -r 3 -o $W/strata-mix-arena$a.json \
      > $W/strata-mix-arena$a.md 2> $W/strata-mix-arena$a.err
  done
  ;;
disk)
  make_models q4_0
  P="The history of the expert arena begins with a simple observation about mixture of experts models: each token touches only a few experts, so"
  for rep in 1 2 3; do
    for a in "--mem 24G --gpu-mem 6G" "--mem 8G --gpu-mem 6G"; do
      tag=$(echo "disk r$rep $a" | tr -c 'a-zA-Z0-9\n' '_')
      echo "== rep $rep '$a'" >> $W/disk-speed.txt
      timeout 100 $S run -m $M --device cuda -p "$P" -n 64 --temp 0 $a --stats $W/$tag.json --force > /dev/null 2>> $W/disk-speed.txt
    done
  done
  ;;
esac
grep -h . $W/vram.txt 2>/dev/null

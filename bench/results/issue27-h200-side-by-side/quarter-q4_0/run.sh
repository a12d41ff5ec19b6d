#!/bin/bash
# The 25 % pair of ../run.sh alone (the device time left allowed one pair): the 30B-A3B shape in
# Q4_0, llama-bench -ngl 99 --n-cpu-moe 36 -p 512 -n 128 -r 3 beside strata bench --device cuda
# --mem 25% --prompt-tokens 512 -n 128 -r 3, in one call of the device tool, records in $OUT.
# LLAMA: llama-bench's directory as in ../run.sh (default /tmp/llcuda).
set -u
R=$PWD; L=${LLAMA:-/tmp/llcuda}
tar xJf .device-carry/bin.tar.xz -C $R; tar xJf .device-carry/lib.tar.xz -C .device-carry
export LD_LIBRARY_PATH=$R/.device-carry/lib
W=$OUT; S=$R/bin/strata-b; M=/tmp/m.gguf
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv > $W/gpu.txt
( time $S make-model --preset 30b-a3b --type q4_0 --stats-tokens 0 -o $M ) > $W/make.txt 2>&1
LD_LIBRARY_PATH=$L:$LD_LIBRARY_PATH timeout 55 $L/llama-bench -m $M -ngl 99 --n-cpu-moe 36 \
  -p 512 -n 128 -r 3 -o json > $W/llama-ncmoe36.json 2> $W/llama-ncmoe36.err
echo "llama rc=$?" >> $W/rc.txt
timeout 50 $S bench -m $M --device cuda --mem 25% --prompt-tokens 512 -n 128 -r 3 \
  -o $W/strata-arena25.json > $W/strata-arena25.md 2> $W/strata-arena25.err
echo "strata rc=$?" >> $W/rc.txt

#!/bin/bash
# Q2_0 against Q4_0 experts on the CPU of the H200 host (16 Xeon vCPUs, AVX-512 VNNI): resident
# decode against the memory bound, 2 and 16 threads, side by side in one bench.
set -u
R=$PWD
tar xJf .device-carry/bin.tar.xz -C "$R"
export LD_LIBRARY_PATH=$R/.device-carry/lib:${LD_LIBRARY_PATH:-}
B=$R/build
lscpu | grep -E "Model name|^CPU\(s\)|Flags" | cut -c1-200 > $OUT/cpu.txt
[ -f /tmp/m4.gguf ] || $B/strata make-model --preset 30b-a3b --type q4_0 -o /tmp/m4.gguf --stats-tokens 0 > $OUT/make.txt 2>&1
[ -f /tmp/m2.gguf ] || $B/strata make-model --preset 30b-a3b --type q4_0 --expert-type q2_0 -o /tmp/m2.gguf --stats-tokens 0 >> $OUT/make.txt 2>&1
for t in 2 16; do
  timeout 250 $B/strata bench -m /tmp/m4.gguf /tmp/m2.gguf --device cpu --mem none --prompt-tokens 64 -n 32 -r 3 -t $t -o $OUT/resident-t$t.json > $OUT/resident-t$t.txt 2>&1
  tail -4 $OUT/resident-t$t.txt
done

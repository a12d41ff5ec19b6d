#!/bin/bash
# The VRAM arena's decode after the successor policy's victim became a heap per layer and a
# slot's copy is waited for once (strata-c), against the binary before this folder's changes
# (strata-a), on the 30B-A3B shape (Q4_0): 128 tokens after a 139-token prompt with --stats, at
# arenas of 100 and 25 %, three rounds, binaries alternating; strata-c at 25 % with the LRU
# policy too (what the policy's own cost is). Binaries and libraries come in .device-carry
# (bin.tar.xz, lib.tar.xz); records go to /tmp/res/heap, packed into $OUT/results.tar after
# every step.
set -u
R=$PWD
mkdir -p /work && ln -sfn "$R" /work/main
tar xJf .device-carry/bin.tar.xz -C "$R"
tar xJf .device-carry/lib.tar.xz -C .device-carry
export LD_LIBRARY_PATH=$R/.device-carry/lib:${LD_LIBRARY_PATH:-}
W=/tmp/res/heap
mkdir -p $W
pack() { tar cf $OUT/results.tar -C /tmp/res .; }
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv > $W/gpu.txt 2>&1
M=/tmp/m30.gguf
[ -f $M ] || ( time $R/strata-c make-model --preset 30b-a3b --type q4_0 --stats-tokens 0 -o $M ) > $W/make.txt 2>&1
ls -la $M >> $W/make.txt; pack
P="The history of the expert arena begins with a simple observation about mixture of experts models: each token touches only a few experts, so"
for rep in 1 2 3; do
  for v in "a --arena 100%" "c --arena 100%" "a --arena 25%" "c --arena 25%" "c --arena 25% --cache-policy lru"; do
    bin=${v%% *}; a=${v#* }
    tag=$(echo "$bin r$rep $a" | tr -c 'a-zA-Z0-9\n' '_')
    echo "== $bin rep $rep '$a'" >> $W/speed.txt
    timeout 90 $R/strata-$bin run -m $M --device cuda -p "$P" -n 128 --temp 0 $a --stats $W/$tag.json --force > /dev/null 2>> $W/speed.txt
    pack
  done
done

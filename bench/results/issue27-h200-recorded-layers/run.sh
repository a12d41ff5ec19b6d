#!/bin/bash
# The VRAM arena with each layer's ops up to its routes recorded once and replayed (strata-e)
# against the binary before them (strata-c, bench/results/issue27-h200-arena-host-time/), on the
# 30B-A3B shape (Q4_0). First strata-e's logits of 12 tokens by sha256: fed one at a time with
# every expert in VRAM, at arenas of 10 and 25 % (1 and 2 copy threads), without read-ahead and
# from the disk tier; the GPU arena tests. Then decode, 128 tokens after a 139-token prompt with --stats, arenas of 100
# and 25 %, three rounds, binaries alternating. Binaries and libraries come in .device-carry
# (bin.tar.xz, lib.tar.xz); records go to /tmp/res, packed into $OUT/results.tar after every
# step.
set -u
R=$PWD
mkdir -p /work && ln -sfn "$R" /work/main
tar xJf .device-carry/bin.tar.xz -C "$R"
tar xJf .device-carry/lib.tar.xz -C .device-carry
export LD_LIBRARY_PATH=$R/.device-carry/lib:${LD_LIBRARY_PATH:-}
W=/tmp/res
mkdir -p $W
pack() { tar cf $OUT/results.tar -C $W .; }
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv > $W/gpu.txt 2>&1
M=/tmp/m30.gguf
[ -f $M ] || ( time $R/strata-e make-model --preset 30b-a3b --type q4_0 --stats-tokens 0 -o $M ) > $W/make.txt 2>&1
ls -la $M >> $W/make.txt; pack
echo '[1, 200, 3000, 17, 5, 99, 1024, 8, 4000, 12, 640, 77]' > /tmp/tok.json
for v in "1 " "1 --arena 25%" "1 --arena 10% --io-threads 1" "1 --arena 25% --readahead 0" "1 --mem 8G --gpu-mem 6G"; do
  chunk=${v%% *}; a=${v#* }
  timeout 120 $R/strata-e logits -m $M --device cuda --tokens /tmp/tok.json --prefill-chunk $chunk --force --out /tmp/l.bin $a > /dev/null 2>> $W/logits.txt
  echo "chunk $chunk '$a': rc $? $(sha256sum /tmp/l.bin | cut -c1-16)" >> $W/logits.txt
  rm -f /tmp/l.bin
  pack
done
(cd $R && timeout 120 build/tests/strata_golden_tests --gtest_filter='GpuArena*:GpuCli.ArenaLogits*:GpuCli.StatsSay*' 2>&1 | tail -40) > $W/gpu_tests.txt
pack
P="The history of the expert arena begins with a simple observation about mixture of experts models: each token touches only a few experts, so"
for rep in 1 2 3; do
  for v in "c --arena 100%" "e --arena 100%" "c --arena 25%" "e --arena 25%"; do
    bin=${v%% *}; a=${v#* }
    tag=$(echo "$bin r$rep $a" | tr -c 'a-zA-Z0-9\n' '_')
    echo "== $bin rep $rep '$a'" >> $W/speed.txt
    timeout 90 $R/strata-$bin run -m $M --device cuda -p "$P" -n 128 --temp 0 $a --stats $W/$tag.json --force > /dev/null 2>> $W/speed.txt
    pack
  done
done

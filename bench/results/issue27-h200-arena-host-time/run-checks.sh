#!/bin/bash
# strata-c's logits of 12 tokens fed one at a time on the 30B-A3B shape (Q4_0) with every
# expert in VRAM, at arenas of 10 to 50 % with 1 to 4 copy threads, without read-ahead, and from
# the disk tier (--mem), by sha256; then the GPU CLI and arena tests. Run after run-heap.sh on
# the same machine (it made the model); records go to /tmp/res/checks.
set -u
R=$PWD
mkdir -p /work && ln -sfn "$R" /work/main
tar xJf .device-carry/bin.tar.xz -C "$R"
tar xJf .device-carry/lib.tar.xz -C .device-carry
export LD_LIBRARY_PATH=$R/.device-carry/lib:${LD_LIBRARY_PATH:-}
W=/tmp/res/checks
rm -rf $W && mkdir -p $W
pack() { tar cf $OUT/results.tar -C /tmp/res .; }
M=/tmp/m30.gguf
echo '[1, 200, 3000, 17, 5, 99, 1024, 8, 4000, 12, 640, 77]' > /tmp/tok.json
for a in "" "--arena 25%" "--arena 10% --io-threads 1" "--arena 50% --io-threads 4" "--arena 25% --readahead 0" "--mem 8G --arena 25%"; do
  timeout 120 $R/strata-c logits -m $M --device cuda --tokens /tmp/tok.json --prefill-chunk 1 --force --out /tmp/l.bin $a > /dev/null 2>> $W/logits.txt
  echo "'$a': rc $? $(sha256sum /tmp/l.bin | cut -c1-16)" >> $W/logits.txt
  pack
done
(cd $R && timeout 240 build/tests/strata_golden_tests --gtest_filter='GpuCli*:GpuArena*' 2>&1 | tail -40) > $W/gpu_tests.txt
pack

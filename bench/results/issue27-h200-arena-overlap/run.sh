#!/bin/bash
# Where the VRAM arena's decode time goes on the H200: the 30B-A3B shape (Q4_0) over 128 tokens
# with --stats, every expert in VRAM against arenas of 100, 50 and 25 %, at 25 % with 1 and 4
# copy threads and without read-ahead, for two binaries of Strata: strata-a (the mixture's picks
# copied to the device before each layer's mix) and strata-b (passed in the launch), and both
# binaries' logits of 12 tokens one at a time, resident and at a 25 % arena, by sha256. Binaries and
# libraries come in .device-carry (bin.tar.xz: build/strata as strata-a and strata-b; lib/);
# records go to /tmp/res, packed into $OUT/results.tar after every step.
set -u
R=$PWD
mkdir -p /work && ln -sfn "$R" /work/main
tar xJf .device-carry/bin.tar.xz -C "$R"
export LD_LIBRARY_PATH=$R/.device-carry/lib:${LD_LIBRARY_PATH:-}
W=/tmp/res
mkdir -p $W
pack() { tar cf $OUT/results.tar -C $W .; }
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv > $W/gpu.txt 2>&1
M=/tmp/m30.gguf
[ -f $M ] || ( time $R/strata-a make-model --preset 30b-a3b --type q4_0 --stats-tokens 0 -o $M ) > $W/make.txt 2>&1
ls -la $M >> $W/make.txt; pack
echo '[1, 200, 3000, 17, 5, 99, 1024, 8, 4000, 12, 640, 77]' > /tmp/tok.json
for bin in a b; do
  for a in "" "--arena 25%"; do
    timeout 60 $R/strata-$bin logits -m $M --device cuda --tokens /tmp/tok.json --prefill-chunk 1 --force --out /tmp/l.bin $a > /dev/null 2>> $W/logits.txt
    echo "$bin '$a': $(sha256sum /tmp/l.bin | cut -c1-16)" >> $W/logits.txt
  done
done
grep "^[ab] '" $W/logits.txt; pack
P="The history of the expert arena begins with a simple observation about mixture of experts models: each token touches only a few experts, so"
for rep in 1 2; do
  for bin in a b; do
    for a in "" "--arena 100%" "--arena 50%" "--arena 25%" "--arena 25% --io-threads 1" "--arena 25% --io-threads 4" "--arena 25% --readahead 0"; do
      tag=$(echo "$bin r$rep $a" | tr -c 'a-zA-Z0-9\n' '_')
      echo "== $bin rep $rep '${a:-resident}'" >> $W/speed.txt
      timeout 60 $R/strata-$bin run -m $M --device cuda -p "$P" -n 128 --temp 0 $a --stats $W/$tag.json --force > /dev/null 2>> $W/speed.txt
    done
    pack
  done
done
grep -E "^== |decode|experts:" $W/speed.txt | sed -e 's/(.*misses: read on demand)//' | cut -c1-230

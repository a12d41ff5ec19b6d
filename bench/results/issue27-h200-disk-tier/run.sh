#!/bin/bash
# The CUDA device arena's disk tier and host arena (--device cuda --mem) on the H200: the GPU CLI
# tests, the 30B-A3B shape's logits against every expert in VRAM and the host tier, and decode
# with host arenas of every expert (--mem 24G), about a third (8G) and almost none (3G) beside the
# host tier at the same device budget, with peak RSS against --mem. Binaries come in .device-carry (bin.tar.xz: build/strata and the golden tests; lib/;
# golden/: the test model the tree leaves out); records go to /tmp/res, packed into
# $OUT/results.tar after every step.
set -u
R=$PWD
mkdir -p /work && ln -sfn "$R" /work/main
tar xJf .device-carry/bin.tar.xz -C "$R"
mkdir -p tests/golden/synthetic/models && cp .device-carry/golden/*.gguf tests/golden/synthetic/models/
export LD_LIBRARY_PATH=$R/.device-carry/lib:${LD_LIBRARY_PATH:-}
B=$R/build
W=/tmp/res
mkdir -p $W
pack() { tar cf $OUT/results.tar -C $W .; }
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv > $W/gpu.txt 2>&1
df -h /tmp > $W/disk.txt 2>&1; mount | grep -E " / | /tmp " >> $W/disk.txt
timeout 240 $B/tests/strata_golden_tests --gtest_filter='GpuCli.*' > $W/gpucli.txt 2>&1
echo "gpucli rc=$?"; grep -E "^\[  (FAILED|PASSED) |Failure" $W/gpucli.txt | head; pack
M=/tmp/m30.gguf
[ -f $M ] || ( time $B/strata make-model --preset 30b-a3b --type q4_0 -o $M ) > $W/make.txt 2>&1
ls -la $M >> $W/make.txt; pack
echo '[1, 200, 3000, 17, 5, 99, 1024, 8, 4000, 12, 640, 77]' > /tmp/tok.json
for a in "" "--gpu-mem 6G" "--mem 8G" "--mem 8G --gpu-mem 6G" "--mem 3G --gpu-mem 6G --io-threads 4" "--mem 24G --gpu-mem 6G"; do
  timeout 150 $B/strata logits -m $M --device cuda --tokens /tmp/tok.json --prefill-chunk 1 --force --out /tmp/l.bin $a > /dev/null 2>> $W/logits.txt
  echo "'$a': $(sha256sum /tmp/l.bin | cut -c1-16)" >> $W/logits.txt
done
grep "^'" $W/logits.txt; pack
P="The history of the expert arena begins with a simple observation about mixture of experts models: each token touches only a few experts, so"
for rep in 1 2 3; do
  for a in "--gpu-mem 6G" "--mem 24G --gpu-mem 6G" "--mem 8G --gpu-mem 6G" "--mem 3G --gpu-mem 6G --io-threads 8"; do
    tag=$(echo "r$rep $a" | tr -c 'a-zA-Z0-9\n' '_')
    echo "== rep $rep '$a'" >> $W/speed.txt
    timeout 150 $B/strata run -m $M --device cuda -p "$P" -n 128 --temp 0 $a --stats $W/$tag.json --force > /dev/null 2>> $W/speed.txt
  done
  pack
done
grep -E "^== |tok/s|experts " $W/speed.txt | tail -40
python3 - $W <<'PY'
import json, glob, sys, os
for f in sorted(glob.glob(sys.argv[1] + "/r*.json")):
    j = json.load(open(f))
    print(os.path.basename(f), "decode", round(j.get("decode_tokens_per_s", 0), 2), "peak_rss_GiB", round(j.get("peak_rss_bytes", 0) / 2**30, 2))
PY
pack

#!/bin/bash
# Q2_0 on the H200: the CUDA kernel tests with Q2_0, strata-tiny-moe with Q2_0 experts on the
# GPU against the CPU (logits hashes), and the 30B-A3B shape with Q4_0 and Q2_0 experts side by
# side: decode with every expert in VRAM and with an 8 GiB device budget (--gpu-mem).
set -u
R=$PWD
mkdir -p /work && ln -sfn "$R" /work/main
tar xJf .device-carry/bin.tar.xz -C "$R"
export LD_LIBRARY_PATH=$R/.device-carry/lib:${LD_LIBRARY_PATH:-}
B=$R/build
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv > $OUT/gpu.txt 2>&1
timeout 120 $B/src/cuda/strata_cuda_tests > $OUT/cuda-tests.txt 2>&1; echo "cuda tests rc=$?"
grep -E "q2_0|PASSED|FAILED" $OUT/cuda-tests.txt | tail -8
T=/tmp/tiny-q2_0.gguf
$B/strata quantize -m models/strata-tiny-moe-q4_0.gguf --experts q2_0 -o $T --force 2>> $OUT/tiny.txt
echo '[1, 200, 3000, 17, 5, 99, 1024, 8, 4000, 12, 640, 77, 9, 15000, 300, 42]' > /tmp/tok.json
for d in cpu cuda; do for c in 256 1; do
  $B/strata logits -m $T --device $d --tokens /tmp/tok.json --prefill-chunk $c --force --out /tmp/l.bin > /dev/null 2>> $OUT/tiny.txt
  echo "tiny q2_0 $d chunk $c: $(sha256sum /tmp/l.bin | cut -c1-16)" | tee -a $OUT/tiny.txt
done; done
[ -f /tmp/m4.gguf ] || ( time $B/strata make-model --preset 30b-a3b --type q4_0 -o /tmp/m4.gguf --stats-tokens 0 ) > $OUT/make.txt 2>&1
[ -f /tmp/m2.gguf ] || ( time $B/strata make-model --preset 30b-a3b --type q4_0 --expert-type q2_0 -o /tmp/m2.gguf --stats-tokens 0 ) >> $OUT/make.txt 2>&1
ls -la /tmp/m4.gguf /tmp/m2.gguf | tee -a $OUT/make.txt
# The 30B shape's Q2_0 experts (rows of 2048 and 768 weights: several tiles a row) on both.
for d in cpu cuda; do
  $B/strata logits -m /tmp/m2.gguf --device $d --tokens /tmp/tok.json --force --out /tmp/l.bin > /dev/null 2>> $OUT/logits30b.txt
  echo "30b q2_0 experts $d: $(sha256sum /tmp/l.bin | cut -c1-16)" | tee -a $OUT/logits30b.txt
done
P="The history of the expert arena begins with a simple observation about mixture of experts models: each token touches only a few experts, so"
for rep in 1 2 3; do for m in m4 m2; do for a in "" "--gpu-mem 8G"; do
  echo "== rep $rep $m '${a:-resident}'" >> $OUT/speed.txt
  timeout 100 $B/strata run -m /tmp/$m.gguf --device cuda -p "$P" -n 128 --temp 0 $a > /dev/null 2>> $OUT/speed.txt
done; done; done
grep -E "^== |tok/s|experts:" $OUT/speed.txt | sed -e 's/(.*misses: read on demand)//' | tail -40

#!/bin/bash
# The GPU CLI tests on the H200 (GpuCli.*: the device arena's logits against every expert in
# VRAM, the disk tier's --mem variants, the refusals, the VRAM and RSS peaks against their
# budgets), then the price of cache-aware routing on the GPU: strata-tiny-moe Q4_0 with a 25 %
# arena, `strata eval run` on the development suite at --moce 0 and 1 against the exact resident
# model, and `strata bench` at the same settings for the tok/s they buy. Carried in
# .device-carry: bin.tar.xz (build/strata, build/tests/strata_golden_tests), lib.tar.xz, golden/
# (the K-quant test model the tree leaves out), eval/ (the development text). Records go to
# /tmp/res, packed into $OUT/results.tar after every step; steps past 250 s are skipped.
set -u
R=$PWD
mkdir -p /work && ln -sfn "$R" /work/main
tar xJf .device-carry/bin.tar.xz -C "$R"
tar xJf .device-carry/lib.tar.xz -C .device-carry
mkdir -p tests/golden/synthetic/models && cp .device-carry/golden/*.gguf tests/golden/synthetic/models/
export LD_LIBRARY_PATH=$R/.device-carry/lib:${LD_LIBRARY_PATH:-}
W=/tmp/res
mkdir -p $W
pack() { tar cf $OUT/results.tar -C $W .; }
in_time() { [ $SECONDS -lt 250 ]; }
timeout 140 build/tests/strata_golden_tests --gtest_filter='GpuCli.*' > $W/gpucli.txt 2>&1
echo "gpucli rc=$?"; grep -E "^\[  (FAILED|PASSED|  OK) |Failure" $W/gpucli.txt | head -20; pack
T=models/strata-tiny-moe-q4_0.gguf
for b in 0 1; do
  in_time || break
  timeout 60 build/strata eval run --suite bench/suites/dev.json --eval-dir .device-carry/eval -m $T --device cuda --arena 25% --moce $b -o $W/eval-moce$b.json > $W/eval-moce$b.txt 2>&1
  echo "eval moce $b rc=$?"; tail -4 $W/eval-moce$b.txt; pack
done
for b in 0 1; do
  in_time || break
  timeout 40 build/strata bench -m $T --device cuda --mem 25% --moce $b --prompt-tokens 512 -n 128 -r 3 -o $W/bench-moce$b.json > $W/bench-moce$b.txt 2>&1
  echo "bench moce $b rc=$?"; tail -3 $W/bench-moce$b.txt; pack
done

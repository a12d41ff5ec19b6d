#!/bin/bash
# VRAM arena on the H200: GPU CLI tests, 30B-A3B shape logits parity (arena vs all in VRAM),
# decode/prefill speed at arenas of 100/50/25 %, pinned host->device bandwidth.
set -u
R=$PWD
mkdir -p /work && ln -sfn "$R" /work/main
tar xJf .device-carry/bin.tar.xz -C "$R"
export LD_LIBRARY_PATH=$R/.device-carry/lib:${LD_LIBRARY_PATH:-}
B=$R/build
nvidia-smi --query-gpu=name,memory.total,memory.used,driver_version --format=csv > $OUT/gpu.txt 2>&1
python3 - > $OUT/h2d.txt 2>&1 <<'PY'
import torch, time
n = 1 << 30
h = torch.empty(n, dtype=torch.uint8, pin_memory=True); d = torch.empty(n, dtype=torch.uint8, device='cuda')
for _ in range(2): d.copy_(h, non_blocking=True)
torch.cuda.synchronize(); best = 1e9
for _ in range(5):
    s = time.perf_counter(); d.copy_(h, non_blocking=True); torch.cuda.synchronize(); best = min(best, time.perf_counter() - s)
print(f"pinned host->device {n/best/1e9:.1f} GB/s (best of 5, 1 GiB)")
PY
cat $OUT/h2d.txt
timeout 200 $B/tests/strata_golden_tests --gtest_filter='GpuCli.*' > $OUT/gpucli.txt 2>&1; echo "gpucli rc=$?"; tail -5 $OUT/gpucli.txt
M=/tmp/m30.gguf
[ -f $M ] || ( time $B/strata make-model --preset 30b-a3b --type q4_0 -o $M ) > $OUT/make.txt 2>&1 || $B/strata make-model --help > $OUT/make-help.txt 2>&1
ls -la $M >> $OUT/make.txt 2>&1; tail -3 $OUT/make.txt
echo '[1, 200, 3000, 17, 5, 99, 1024, 8, 4000, 12, 640, 77]' > /tmp/tok.json
for a in "" "--arena 25%" "--arena 50% --io-threads 4" "--gpu-mem 40G"; do
  timeout 120 $B/strata logits -m $M --device cuda --tokens /tmp/tok.json --prefill-chunk 1 --force --out /tmp/l.bin $a > /dev/null 2>> $OUT/logits.txt
  echo "$a: $(sha256sum /tmp/l.bin | cut -c1-16)" >> $OUT/logits.txt
done
cat $OUT/logits.txt | grep -v "^note\|plan\|^  " | tail -6
P="The history of the expert arena begins with a simple observation about mixture of experts models: each token touches only a few experts, so"
for rep in 1 2 3; do
for a in "" "--arena 100%" "--arena 50%" "--arena 25%"; do
  echo "== rep $rep arena '${a:-resident}'" >> $OUT/speed.txt
  timeout 100 $B/strata run -m $M --device cuda -p "$P" -n 128 --temp 0 $a > /dev/null 2>> $OUT/speed.txt
done; done
grep -E "^== |tok/s|experts:" $OUT/speed.txt | sed -e 's/(.*misses: read on demand)//' | tail -30

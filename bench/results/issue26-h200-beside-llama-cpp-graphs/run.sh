#!/bin/bash
# Strata (routing in place, recorded decode steps) beside llama.cpp's CUDA backend on the H200:
# the 30B-A3B shape in Q4_0 and in Q4_K, every weight in VRAM, two alternating rounds each
# (bench/beside_llama_cpp.py). llama.cpp v0.5.0's llama-bench and its libraries come in
# .device-carry/llama.tar.xz (built elsewhere: -DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90).
set -u
R=$PWD
tar xJf .device-carry/bin.tar.xz -C "$R"
tar xJf .device-carry/llama.tar.xz -C /tmp
export LD_LIBRARY_PATH=$R/.device-carry/lib:/tmp/llb:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
B=$R/build
nvidia-smi --query-gpu=name,memory.total,memory.used,driver_version --format=csv > $OUT/gpu.txt 2>&1
ldd /tmp/llb/llama-bench | grep "not found" > $OUT/ldd-missing.txt
timeout 300 $B/src/cuda/strata_cuda_tests > $OUT/cuda_tests.txt 2>&1; echo "cuda tests rc=$?"; tail -2 $OUT/cuda_tests.txt
for type in q4_0 q4_k; do
  M=/tmp/30b-$type.gguf
  $B/strata make-model --preset 30b-a3b --type $type --stats-tokens 0 -o $M > $OUT/make-$type.txt 2>&1
  python3 bench/beside_llama_cpp.py /tmp/llb/llama-bench $B/strata $M $OUT/30b-$type 2 cuda > $OUT/30b-$type.txt 2>&1
  tail -6 $OUT/30b-$type.txt
done
# Kernel durations of one decode step of the Q4_0 model (Nsight Compute, the device's own clocks
# and caches): 40 kernels from the third generated token on, about two layers.
M=/tmp/30b-q4_0.gguf
timeout 240 ncu --clock-control none --cache-control none --metrics gpu__time_duration.sum,launch__grid_size,launch__block_size \
  --launch-skip 2200 --launch-count 40 --csv $B/strata run -m $M --device cuda -p "Hi" -n 6 --temp 0 > $OUT/ncu-decode.csv 2> $OUT/ncu-decode.err
tail -3 $OUT/ncu-decode.err

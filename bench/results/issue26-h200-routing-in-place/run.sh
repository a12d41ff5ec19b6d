#!/bin/bash
# Routing in place on the H200: the CUDA tests, the GPU command-line tests, and decode/prefill of
# the 30B-A3B shape (Q4_0) and strata-tiny-moe, every weight in VRAM.
#   run.sh [LLAMA_BENCH]   (with llama.cpp's CUDA llama-bench: side by side, bench/beside_llama_cpp.py)
set -u
R=$PWD
mkdir -p /work && ln -sfn "$R" /work/main
tar xJf .device-carry/bin.tar.xz -C "$R"
export LD_LIBRARY_PATH=$R/.device-carry/lib:${LD_LIBRARY_PATH:-}
B=$R/build
nvidia-smi --query-gpu=name,memory.total,memory.used,driver_version --format=csv > $OUT/gpu.txt 2>&1
timeout 300 $B/src/cuda/strata_cuda_tests > $OUT/cuda_tests.txt 2>&1; echo "cuda tests rc=$?"; tail -3 $OUT/cuda_tests.txt
timeout 300 $B/tests/strata_golden_tests --gtest_filter="${GOLDEN_FILTER:-GpuCli.*}" > $OUT/gpucli.txt 2>&1; echo "gpucli rc=$?"; tail -3 $OUT/gpucli.txt
M=/tmp/m30.gguf
[ -f $M ] || $B/strata make-model --preset 30b-a3b --type q4_0 --stats-tokens 0 -o $M > $OUT/make.txt 2>&1
ls -la $M
if [ -n "${1:-}" ]; then
  python3 bench/beside_llama_cpp.py "$1" $B/strata $M $OUT/30b 2 cuda > $OUT/30b.txt 2>&1; cat $OUT/30b.txt | tail -8
  python3 bench/beside_llama_cpp.py "$1" $B/strata models/strata-tiny-moe-q4_0.gguf $OUT/tiny 2 cuda > $OUT/tiny.txt 2>&1; tail -8 $OUT/tiny.txt
else
  timeout 300 $B/strata bench -m $M --device cuda --prompt-tokens 512 -n 128 -r 3 -o $OUT/30b.json > $OUT/30b.txt 2>&1; tail -6 $OUT/30b.txt
  timeout 200 $B/strata bench -m models/strata-tiny-moe-q4_0.gguf --device cuda --prompt-tokens 512 -n 128 -r 3 -o $OUT/tiny.json > $OUT/tiny.txt 2>&1; tail -6 $OUT/tiny.txt
fi
# A timeline of 32 decode steps (kernel durations per name), where the machine has Nsight Systems.
if [ -n "${PROFILE:-}" ] && command -v nsys > /dev/null; then
  nsys profile --cuda-graph-trace=node -o /tmp/decode --force-overwrite true $B/strata run -m $M --device cuda -p "Hello there" -n 48 --temp 0 > /dev/null 2> $OUT/profile-run.txt
  nsys stats --report cuda_gpu_kern_sum --format csv -o $OUT/kernels /tmp/decode.nsys-rep > /dev/null 2>&1
  ls $OUT
fi

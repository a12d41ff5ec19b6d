#!/usr/bin/env bash
# Builds the libFuzzer targets with clang-14 (libFuzzer, ASan, UBSan) and fuzzes each for
# SECONDS seconds, as many side by side as there are cores, starting from its seeds in
# fuzz/corpus/: the GGUF reader (corpus/gguf), the expert store's traces and warm-start files
# (corpus/expert_files), the evaluation's suites, run records and reference files
# (corpus/eval_files), the tokenizer with the Qwen3 vocabulary (corpus/tokenizer), calibration
# files (corpus/calibration), and the server's requests and stop sequences (corpus/api_request).
# New inputs go to a scratch corpus so the checked-in seeds stay small. Exits non-zero on any
# crash, leak, timeout or sanitizer report, printing the end of that target's output; the input
# that caused it is saved under the build directory's fuzz-artifacts/.
#
# Usage: fuzz/run_fuzz.sh SECONDS [extra libFuzzer flags...]
# Environment: STRATA_FUZZ_BUILD (build directory, default build-fuzz), STRATA_FUZZ_JOBS
# (ninja parallelism, default 2), STRATA_FUZZ_PARALLEL (targets at a time, default nproc).
set -euo pipefail

if [[ $# -lt 1 || ! $1 =~ ^[0-9]+$ ]]; then
  echo "usage: $0 SECONDS [libFuzzer flags...]" >&2
  exit 2
fi
seconds=$1
shift

root=$(cd "$(dirname "$0")/.." && pwd)
build=${STRATA_FUZZ_BUILD:-$root/build-fuzz}

cmake -S "$root" -B "$build" -G Ninja \
  -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 -DCMAKE_BUILD_TYPE=Release \
  -DSTRATA_BUILD_FUZZ=ON -DSTRATA_BUILD_TESTS=OFF -DSTRATA_BUILD_BENCH=OFF >/dev/null
ninja -C "$build" -j "${STRATA_FUZZ_JOBS:-2}" gguf_reader_fuzz expert_files_fuzz eval_files_fuzz \
  tokenizer_fuzz calibration_file_fuzz api_request_fuzz

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
mkdir -p "$build/fuzz-artifacts"

# fuzz TARGET SEEDS [libFuzzer flags...]: one target, its output in $scratch/TARGET.log and its
# exit status in $scratch/TARGET.status.
fuzz() {
  local target=$1 seeds=$2 status=0
  shift 2
  mkdir -p "$scratch/$target"
  "$build/fuzz/$target" "$scratch/$target" "$root/fuzz/corpus/$seeds" \
    -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$build/fuzz-artifacts/$target-" "$@" >"$scratch/$target.log" 2>&1 ||
    status=$?
  echo "$status" >"$scratch/$target.status"
}

# The targets run side by side, as many at a time as there are cores (STRATA_FUZZ_PARALLEL).
parallel=${STRATA_FUZZ_PARALLEL:-$(nproc)}
targets=()
start() {
  while (($(jobs -rp | wc -l) >= parallel)); do wait -n || true; done
  targets+=("$1")
  fuzz "$@" &
}
# Inputs up to 32 KiB: room for a real model's header with shortened vocabularies.
start gguf_reader_fuzz gguf -dict="$root/fuzz/gguf.dict" -max_len=32768 "$@"
start expert_files_fuzz expert_files -max_len=4096 "$@"
start eval_files_fuzz eval_files -max_len=4096 "$@"
start tokenizer_fuzz tokenizer -max_len=4096 "$@"
# A seed calibration of the golden synthetic model is ~60 KiB.
start calibration_file_fuzz calibration -dict="$root/fuzz/gguf.dict" -max_len=131072 "$@"
start api_request_fuzz api_request -dict="$root/fuzz/api_request.dict" -max_len=8192 "$@"
wait

failed=0
for target in "${targets[@]}"; do
  status=$(cat "$scratch/$target.status" 2>/dev/null || echo "none")
  if [[ $status == 0 ]]; then
    echo "$target: $(grep '^Done [0-9]* runs' "$scratch/$target.log")"
  else
    echo "$target: failed (exit status $status); the end of its output:" >&2
    tail -n 60 "$scratch/$target.log" >&2
    failed=1
  fi
done
exit "$failed"

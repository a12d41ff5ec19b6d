#!/usr/bin/env bash
# Builds the GGUF reader fuzz target with clang-14 (libFuzzer, ASan, UBSan) and fuzzes it for
# SECONDS seconds, starting from fuzz/corpus/gguf. New inputs go to a scratch corpus so the
# checked-in seeds stay small. Exits non-zero on any crash, leak, timeout or sanitizer report;
# the input that caused it is saved under the build directory's fuzz-artifacts/.
#
# Usage: fuzz/run_gguf_fuzz.sh SECONDS [extra libFuzzer flags...]
# Environment: STRATA_FUZZ_BUILD (build directory, default build-fuzz), STRATA_FUZZ_JOBS
# (ninja parallelism, default 2).
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
ninja -C "$build" -j "${STRATA_FUZZ_JOBS:-2}" gguf_reader_fuzz

corpus=$(mktemp -d)
trap 'rm -rf "$corpus"' EXIT
mkdir -p "$build/fuzz-artifacts"
# Inputs up to 32 KiB: room for a real model's header with shortened vocabularies.
"$build/fuzz/gguf_reader_fuzz" "$corpus" "$root/fuzz/corpus/gguf" \
  -dict="$root/fuzz/gguf.dict" -max_total_time="$seconds" -max_len=32768 -timeout=10 \
  -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$build/fuzz-artifacts/" "$@"

#!/bin/bash
# strata serve on the H200: sessions decoded together on the CUDA backend (the DecodeTogether
# and SharedEngine tests with --device auto, which is CUDA there), then bench/serve_load.mjs with
# --parallel 1 and 4 on the 30B-A3B shape (every expert in VRAM, and an arena of 25 %) and on
# strata-tiny-moe. Two calls, each inside the device's 10 minutes: `run.sh 1` (tests, tiny,
# 30B resident), `run.sh 2` (30B with an arena of 25 %).
set -u
stage=${1:-1}
R=$PWD
mkdir -p /work && ln -sfn "$R" /work/main
tar xJf .device-carry/bin.tar.xz -C "$R"
export LD_LIBRARY_PATH=$R/.device-carry/lib:${LD_LIBRARY_PATH:-}
B=$R/build
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv > $OUT/gpu.txt 2>&1
[ $stage = 1 ] && timeout 200 $B/tests/strata_golden_tests --gtest_filter='*DecodeTogether*:*SharedEngine*' > $OUT/together.txt 2>&1
[ $stage = 1 ] && { echo "together rc=$?"; grep -E "OK|FAILED|Failure" $OUT/together.txt | head -12; }
M=/tmp/m30.gguf
[ -f $M ] || ( time $B/strata make-model --preset 30b-a3b --type q4_0 --vocab models/strata-tiny-moe-q4_0.gguf --stats-tokens 0 -o $M ) > $OUT/make.txt 2>&1
tail -3 $OUT/make.txt 2>/dev/null
load() {  # NAME MODEL CLIENTS REQUESTS MAX_TOKENS [serve flags]
  local name=$1 model=$2 clients=$3 requests=$4 max=$5; shift 5
  timeout 280 python3 bench/serve_load.py --binary $B/strata --model $model \
    --text .device-carry/en_prose.jsonl --out $OUT/$name.json --parallel 1,4 --clients $clients --requests $requests \
    --max-tokens $max --rounds 3 -- --device cuda --ctx 1024 "$@" > $OUT/$name.txt 2>&1
  echo "== $name rc=$?"; tail -3 $OUT/$name.txt
}
if [ $stage = 1 ]; then
  load tiny-resident models/strata-tiny-moe-q4_0.gguf 8 4 64
  load 30b-resident $M 4 4 64
else
  load 30b-arena25 $M 4 2 48 --arena 25%
fi

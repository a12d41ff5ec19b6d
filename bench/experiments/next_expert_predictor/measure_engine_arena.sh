#!/usr/bin/env bash
# measure_engine_arena.sh TAG MODEL [strata options]: the real arena over the first 1024 tokens
# of each of the six held-out documents of bench/cache_lab.sh (decode steps, `strata eval run`),
# printing plain hits, timely and late read-ahead hits and misses as shares of all claims, and
# ms a token.
#   measure_engine_arena.sh succ ../../../models/strata-tiny-moe-q4_0.gguf --arena 25% \
#     --readahead 0
#   measure_engine_arena.sh pred ../../../models/strata-tiny-moe-q4_0.gguf --arena 25% \
#     --readahead 0 --predictor tiny.pred
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
strata=${STRATA:-$here/../../../build/strata}
eval_dir=${EVAL_DIR:-$here/../../../../shared/eval}
tag=$1; model=$2; shift 2
work=${WORK:-/tmp/next-expert-arena}
mkdir -p "$work"
for doc in chat:3_00126 code:c-clang.c-0 en_prose:botchan-11 ja:manja-g77.1.gz \
  json:live_multiple_220-94-2 math:gsm8k-13; do
  domain=${doc%%:*}
  "$here/../../one_window_suite.py" "$eval_dir" "$model" "$domain" "${doc#*:}" \
    >"$work/suite-$domain.json"
  "$strata" eval run --suite "$work/suite-$domain.json" -m "$model" "$@" --force \
    -o "$work/$tag-$domain.json" >/dev/null 2>"$work/$tag-$domain.err"
done
python3 - "$work" "$tag" <<'PY'
import json, sys
work, tag = sys.argv[1:]
total = dict(hits=0, readahead_hits=0, late_readaheads=0, misses=0); ms = tokens = 0
for domain in ("chat", "code", "en_prose", "ja", "json", "math"):
    stats = json.load(open(f"{work}/{tag}-{domain}.json"))["candidate_stats"]
    for key in total: total[key] += stats["decode_experts"][key]
    ms += stats["decode_ms"]; tokens += stats["decode_tokens"]
claims = sum(total.values()); share = {k: 100 * v / claims for k, v in total.items()}
print(f"{tag}: hits {share['hits']:.2f} %, timely read-ahead hits {share['readahead_hits']:.1f} %, "
      f"late {share['late_readaheads']:.1f} %, misses {share['misses']:.1f} %, "
      f"{ms / tokens:.2f} ms a token")
PY

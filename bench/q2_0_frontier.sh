#!/usr/bin/env bash
# The size-quality frontier of strata-tiny-moe's routed experts against the F16 export, over the
# development suite (bench/suites/dev.json: 10 windows per domain of ../shared/eval, 64 prompt +
# 128 scored tokens each), written to bench/results/q2_0_frontier/:
#
#   frontier.{md,json,svg}  mean KLD, top-1 and PPL for the experts (only) requantized from F16
#                           to Q8_0, Q5_0, IQ4_NL, Q4_0 and Q2_0: plain, importance-weighted
#                           (--calib), healed, and both; and pruned to 48 and 32 experts per
#                           layer, alone (F16 experts), with Q4_0 and with healed Q2_0
#   prune-saliency.md       the pruning criteria side by side at 48 and 32 experts
#   heal-compare.md         plain Q2_0 against healed Q2_0, paired bootstrap per domain
#   importance-compare.md   plain Q2_0 against importance-weighted Q2_0, likewise
#   heal.txt                the scales heal chose per layer and their held-out errors
#   calibrate.txt           what the calibration ran on
#
# The calibration runs on the documents of ../shared/eval that no window of the suite scores
# (--exclude-suite), so no scored token was seen by it.
#
#   bench/q2_0_frontier.sh [STRATA_BINARY] [OUTPUT_DIR]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
strata=$(realpath "${1:-$root/build/strata}")
out=$(realpath -m "${2:-$root/bench/results/q2_0_frontier}")
shared=$(realpath -m "$root/../shared")
eval_dir=${EVAL_DIR:-$shared/eval}
suite=$root/bench/suites/dev.json
f16=$shared/models/strata-tiny-moe-f16.gguf
[[ -f $f16 ]] || { echo "q2_0_frontier: $f16 is missing (../shared/models)" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$out/records"
cd "$root"
run() { "$strata" eval run --suite "$suite" --eval-dir "$eval_dir" -t 2 --force "$@"; }

echo "== reference: the F16 model" >&2
run -m "$f16" --batch --save-ref "$work/ref" -o "$out/records/f16.json" >/dev/null

echo "== calibration on the documents the suite does not score" >&2
"$strata" calibrate -m "$f16" $(printf -- "-f %s " "$eval_dir"/*.jsonl) --exclude-suite "$suite" \
  -o "$work/tiny.calib" 2>&1 | tee "$out/calibrate.txt" >&2

records=()
score() {  # name model
  run -m "$2" --batch --ref-logits "$work/ref" -o "$out/records/$1.json" >/dev/null
  records+=("$out/records/$1.json")
}
for format in Q8_0 Q5_0 IQ4_NL Q4_0 Q2_0; do
  "$strata" quantize -m "$f16" --experts "$format" -o "$work/$format.gguf" 2>/dev/null
  score "experts-$format" "$work/$format.gguf"
done
"$strata" quantize -m "$f16" --experts q2_0 --calib "$work/tiny.calib" -o "$work/Q2_0-weighted.gguf" 2>/dev/null
score experts-Q2_0-weighted "$work/Q2_0-weighted.gguf"
"$strata" heal -m "$work/Q2_0.gguf" --calib "$work/tiny.calib" -o "$work/Q2_0-healed.gguf" \
  2>"$out/heal.txt"
score experts-Q2_0-healed "$work/Q2_0-healed.gguf"
"$strata" heal -m "$work/Q2_0-weighted.gguf" --calib "$work/tiny.calib" \
  -o "$work/Q2_0-weighted-healed.gguf" 2>/dev/null
score experts-Q2_0-weighted-healed "$work/Q2_0-weighted-healed.gguf"

# Pruning: the F16 model pruned, then (with a calibration of the pruned model, whose routers
# differ) its experts quantized and healed.
saliency_records=()
for keep in 48 32; do
  for saliency in total reap usage; do
    "$strata" prune -m "$f16" --calib "$work/tiny.calib" --keep "$keep" --saliency "$saliency" \
      -o "$work/pruned-$saliency-$keep.gguf" 2>/dev/null
    run -m "$work/pruned-$saliency-$keep.gguf" --batch --ref-logits "$work/ref" \
      -o "$out/records/pruned-$keep-$saliency.json" >/dev/null
    saliency_records+=("$out/records/pruned-$keep-$saliency.json")
  done
  pruned=$work/pruned-total-$keep.gguf
  records+=("$out/records/pruned-$keep-total.json")
  "$strata" calibrate -m "$pruned" $(printf -- "-f %s " "$eval_dir"/*.jsonl) \
    --exclude-suite "$suite" -o "$work/pruned-$keep.calib" 2>/dev/null
  "$strata" quantize -m "$pruned" --experts Q4_0 -o "$work/pruned-$keep-Q4_0.gguf" 2>/dev/null
  score "pruned-$keep-Q4_0" "$work/pruned-$keep-Q4_0.gguf"
  "$strata" quantize -m "$pruned" --experts Q2_0 -o "$work/pruned-$keep-Q2_0.gguf" 2>/dev/null
  "$strata" heal -m "$work/pruned-$keep-Q2_0.gguf" --calib "$work/pruned-$keep.calib" \
    -o "$work/pruned-$keep-Q2_0-healed.gguf" 2>/dev/null
  score "pruned-$keep-Q2_0-healed" "$work/pruned-$keep-Q2_0-healed.gguf"
done
"$strata" eval table "${saliency_records[@]}" --md "$out/prune-saliency.md" --force >/dev/null

"$strata" eval table "${records[@]}" -o "$out/frontier.json" --md "$out/frontier.md" \
  --bars "$out/frontier.svg" --force >/dev/null
"$strata" eval compare "$out/records/experts-Q2_0.json" "$out/records/experts-Q2_0-healed.json" \
  --md "$out/heal-compare.md" --force >/dev/null
"$strata" eval compare "$out/records/experts-Q2_0.json" "$out/records/experts-Q2_0-weighted.json" \
  --md "$out/importance-compare.md" --force >/dev/null
echo "wrote $out" >&2

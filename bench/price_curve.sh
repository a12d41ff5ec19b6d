#!/usr/bin/env bash
# The price of Strata's lossy knobs on strata-tiny-moe, over the development suite
# (bench/suites/dev.json: 10 windows per domain of ../shared/eval, 64 prompt + 128 scored
# tokens each), written to bench/results/price_curve/:
#
#   moce.{md,json,svg}   cache-aware routing: --moce {0, 0.25, 0.5, 0.85, 1.5} at arenas of
#                        100 %, 50 % and 25 % of the experts, each scored token by token in
#                        decode steps against the same model with exact routing, all experts
#                        resident; KLD and top-1 beside hit rate, MB read and tok/s
#   quant.{md,json,svg}  expert formats: the Q8_0 model's experts requantized (`strata
#                        quantize`) to every format whose blocks fit their rows, and the
#                        shipped Q4_0 model, scored in batches against the Q8_0 model;
#                        quant-refused.md lists the formats that do not fit, and why
#   moce-compare.md      --moce 0.5 against 0.85 at a 25 % arena, paired bootstrap per domain
#   exact.md             the exact decode path against its own batch reference (KLD must be 0)
#   ppl.md               the Q8_0 model's perplexity per domain on 512-token windows, to set
#                        beside the held-out figures of ../shared/models/README.md
#
#   bench/price_curve.sh [STRATA_BINARY] [OUTPUT_DIR]
#
# Stored reference logits (~500 MB each) go to a temporary directory.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
strata=$(realpath "${1:-$root/build/strata}")
out=$(realpath -m "${2:-$root/bench/results/price_curve}")
shared=$(realpath -m "$root/../shared")
eval_dir=${EVAL_DIR:-$shared/eval}
suite=$root/bench/suites/dev.json
q4=$root/models/strata-tiny-moe-q4_0.gguf
q8=$shared/models/strata-tiny-moe-q8_0.gguf
[[ -f $q8 ]] || { echo "price_curve: $q8 is missing (../shared/models)" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$out/records"
cd "$root"

# --force: the records and reports of an earlier run are replaced.
run() { "$strata" eval run --suite "$suite" --eval-dir "$eval_dir" -t 2 --force "$@"; }

echo "== reference: exact routing, all experts resident" >&2
run -m "$q4" --ref-batch --save-ref "$work/ref-q4" -o "$out/records/exact.json" --md "$out/exact.md" >/dev/null

moce_records=()
for arena in 100% 50% 25%; do
  for bonus in 0 0.25 0.5 0.85 1.5; do
    record=$out/records/moce-arena${arena%\%}-b$bonus.json
    echo "== --arena $arena --moce $bonus" >&2
    run -m "$q4" --arena "$arena" --moce "$bonus" --ref-logits "$work/ref-q4" -o "$record" >/dev/null
    moce_records+=("$record")
  done
done
"$strata" eval table "${moce_records[@]}" -o "$out/moce.json" --md "$out/moce.md" \
  --curve "$out/moce.svg" --force >/dev/null
"$strata" eval compare "$out/records/moce-arena25-b0.5.json" "$out/records/moce-arena25-b0.85.json" \
  --md "$out/moce-compare.md" --force >/dev/null
rm -rf "$work/ref-q4"

echo "== reference: the Q8_0 model" >&2
run -m "$q8" --batch --save-ref "$work/ref-q8" -o "$out/records/quant-q8_0.json" >/dev/null
quant_records=("$out/records/quant-q8_0.json")
rm -f "$out/quant-refused.md"
for format in Q6_K Q5_K Q5_1 Q5_0 IQ4_NL IQ4_XS Q4_K Q4_1 Q4_0 Q3_K Q2_K; do
  model=$work/experts-$format.gguf
  if ! "$strata" quantize -m "$q8" --experts "$format" -o "$model" 2>"$work/quantize.err"; then
    echo "* $format: $(tail -n 1 "$work/quantize.err")" | tee -a "$out/quant-refused.md" >&2
    continue
  fi
  record=$out/records/quant-experts-$format.json
  run -m "$model" --batch --ref-logits "$work/ref-q8" -o "$record" >/dev/null
  quant_records+=("$record")
  rm -f "$model"
done
record=$out/records/quant-shipped-q4_0.json
run -m "$q4" --batch --ref-logits "$work/ref-q8" -o "$record" >/dev/null
quant_records+=("$record")
"$strata" eval table "${quant_records[@]}" -o "$out/quant.json" --md "$out/quant.md" \
  --bars "$out/quant.svg" --force >/dev/null

echo "== perplexity of the Q8_0 model on 512-token windows" >&2
"$strata" eval make-suite --eval-dir "$eval_dir" --vocab "$q8" --windows 20 --prompt 1 \
  --scored 511 --seed 2 -o "$work/ppl-suite.json" 2>/dev/null
"$strata" eval run --suite "$work/ppl-suite.json" --eval-dir "$eval_dir" -t 2 -m "$q8" --batch \
  -o "$out/records/ppl.json" --md "$out/ppl.md" --force >/dev/null
echo "wrote $out" >&2

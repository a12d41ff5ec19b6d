#!/usr/bin/env bash
# The expert-cache study behind bench/results/cache_lab/: records expert traces of the bundled
# model on held-out text, replays them through every replacement policy and Belady's MIN, and
# checks the simulator against the real arena.
#
#   bench/cache_lab.sh [STRATA_BINARY] [OUTPUT_DIR]
#
# Traces: one document per domain of the evaluation text (teacher-forced, the model's trained
# context of 1024 tokens each), and two generations (200-token prompt, 800 tokens sampled at
# temperature 0.8, seed 1). The "tuning" set chose the policies' constants (LRFU's half-life,
# next-use's and successor's features: src/experts/next_use_policy.h); "heldout" is reported,
# token by token; "generation-as-arena" replays the generations' prompts as the arena's
# prefill does. Traces are deterministic (same bytes for any thread count or prefill chunk)
# and are written to a temporary directory; the reports go to OUTPUT_DIR.
#
# arena_check.md: `strata run` with the streaming arena (read-ahead off, three memory budgets,
# each policy) against cachesim on the trace of the same tokens, at the arena's slot count.
# heldout-readahead.md: the held-out traces with read-ahead replayed from their predictions;
# arena_readahead.md: the real arena's read-ahead, timely and late, on the held-out documents.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
strata=$(realpath "${1:-$root/build/strata}")
out=$(realpath -m "${2:-$root/bench/results/cache_lab}")
eval_dir=${EVAL_DIR:-$root/../shared/eval}
model=$root/models/strata-tiny-moe-q4_0.gguf
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$out"

# document FILE ID: the text of one evaluation document.
document() {
  python3 -c 'import json, sys
for line in open(sys.argv[1]):
    doc = json.loads(line)
    if doc["id"] == sys.argv[2]:
        sys.stdout.write(doc["text"] + "\n")' "$eval_dir/$1.jsonl" "$2" >"$work/$1-$2.txt"
  [[ -s $work/$1-$2.txt ]] || { echo "no document $2 in $1.jsonl" >&2; exit 1; }
}

# teacher_forced SET FILE ID
teacher_forced() {
  document "$2" "$3"
  "$strata" trace -m "$model" --teacher-forced "$work/$2-$3.txt" --limit 1024 \
    -o "$work/$1-$2.trace"
}

# generation SET NAME FILE ID
generation() {
  document "$3" "$4"
  "$strata" trace -m "$model" -f "$work/$3-$4.txt" --limit 200 -n 800 --temp 0.8 --seed 1 \
    -o "$work/$1-gen-$2.trace"
}

teacher_forced tuning chat 2_00079
teacher_forced tuning code c-bpf_struct_ops.c-0
teacher_forced tuning en_prose botchan-1
teacher_forced tuning ja manja-at.1.gz
teacher_forced tuning json live_multiple_150-58-4
teacher_forced tuning math gsm8k-1
teacher_forced heldout chat 3_00126
teacher_forced heldout code c-clang.c-0
teacher_forced heldout en_prose botchan-11
teacher_forced heldout ja manja-g77.1.gz
teacher_forced heldout json live_multiple_220-94-2
teacher_forced heldout math gsm8k-13
generation heldout prose en_prose botchan-13
generation heldout code code c-crash_core.c-0

# Read-ahead replayed from the predictions the traces carry: hits + read-ahead hits (an upper
# bound on the arena's timely ones: the simulator has no clock).
traces=()
for trace in "$work"/heldout-*.trace; do traces+=(--trace "$trace"); done
(cd "$work" && "$strata" cachesim "${traces[@]/#$work\//}" --sizes 10%,25%,50% \
  --policies lrfu,nextuse,successor,min --readahead 8 --out "$out/heldout-readahead.md" \
  --json "$out/heldout-readahead.json" --force)

for set in tuning heldout; do
  traces=()
  for trace in "$work/$set"-*.trace; do traces+=(--trace "$trace"); done
  (cd "$work" && "$strata" cachesim "${traces[@]/#$work\//}" --sizes 5%,10%,25%,50%,75% \
    --policies lru,lfu,arc,lrfu,nextuse,successor,min --out "$out/$set.md" --json "$out/$set.json" \
    --plot "$out/$set.svg" --force)
done
(cd "$work" && "$strata" cachesim --trace heldout-gen-code.trace --trace heldout-gen-prose.trace \
  --sizes 5%,10%,25%,50%,75% --policies lru,lfu,arc,lrfu,nextuse,successor,min --prefill-chunk 256 --scan-prompt \
  --out "$out/generation-as-arena.md" --json "$out/generation-as-arena.json" \
  --plot "$out/generation-as-arena.svg" --force)

# The arena decodes the tokens a trace of one fewer generated token feeds (run does not feed
# its last token).
head -c 900 "$work/code-c-crash_core.c-0.txt" >"$work/arena-prompt.txt"
"$strata" trace -m "$model" -f "$work/arena-prompt.txt" -n 299 --temp 0.8 --seed 1 \
  -o "$work/arena.trace"
{
  echo "# Simulator against the arena"
  echo
  echo "\`strata run --mem BUDGET --cache-policy P --readahead 0 -n 300 --temp 0.8 --seed 1\`"
  echo "on a 262-token code prompt, against \`strata cachesim --prefill-chunk 256 --scan-prompt\`"
  echo "on the trace of the same tokens at the arena's slot count: hits / accesses."
  echo
  echo "| budget | policy | slots | arena prefill | sim prefill | arena decode | sim decode |"
  echo "|---|---|---:|---:|---:|---:|---:|"
  for budget in 96M 100M 104M; do
    for policy in lru lfu arc lrfu nextuse successor; do
      "$strata" run -m "$model" --mem "$budget" --cache-policy "$policy" --readahead 0 \
        -f "$work/arena-prompt.txt" -n 300 --temp 0.8 --seed 1 --stats "$work/stats.json" \
        --force >/dev/null 2>&1
      slots=$(python3 -c 'import json, re, sys
print(re.search(r"of (\d+) slots", json.load(open(sys.argv[1]))["model"]).group(1))' \
        "$work/stats.json")
      "$strata" cachesim --trace "$work/arena.trace" --sizes "$slots" --policies "$policy" \
        --prefill-chunk 256 --scan-prompt --json "$work/sim.json" --force >/dev/null
      python3 - "$work/stats.json" "$work/sim.json" "$budget" "$policy" "$slots" <<'PY'
import json, sys
stats, sim = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
arena = {}
for step in stats["steps"]:
    hits, claims = arena.get(step["phase"], (0, 0))
    e = step["experts"]
    arena[step["phase"]] = (hits + e["hits"], claims + e["hits"] + e["misses"])
result = next(r for r in sim["results"] if r["policy"] == sys.argv[4])
cell = lambda c: f"{c['hits']}/{c['accesses']}"
print(f"| {sys.argv[3]} | {sys.argv[4]} | {sys.argv[5]} | {arena['prefill'][0]}/{arena['prefill'][1]}"
      f" | {cell(result['prompt'])} | {arena['decode'][0]}/{arena['decode'][1]}"
      f" | {cell(result['generated'])} |")
PY
    done
  done
} >"$out/arena_check.md"

# arena_readahead.md: the real arena at a 25 % share on the held-out documents, token by token
# in decode steps (`strata eval run`, one window per document: its first 1024 tokens, each
# document from an empty arena as cachesim replays it), with read-ahead off, at the top-8 one
# layer ahead, and two layers ahead reading the farther layer's top 2 (the default for this
# model's small units) or all 8, the latter also with 8 and 16 units in flight; and the same
# model in the unit layout (`strata repack`: a unit is one read, not three) at its default 12
# units in flight, at 4, and with all 8 guesses two layers ahead: plain hits, and hits +
# read-aheads that arrived in time, against MIN on the same tokens.
"$strata" repack -m "$model" -o "$work/units.gguf" 2>/dev/null
for doc in chat:3_00126 code:c-clang.c-0 en_prose:botchan-11 ja:manja-g77.1.gz \
  json:live_multiple_220-94-2 math:gsm8k-13; do
  domain=${doc%%:*}
  "$root/bench/one_window_suite.py" "$eval_dir" "$model" "$domain" "${doc#*:}" \
    >"$work/suite-$domain.json"
  for setting in stacked:0:1:0:0 stacked:8:1:0:0 stacked:8:2:2:0 stacked:8:2:8:0 \
    stacked:8:2:8:8 stacked:8:2:8:16 units:8:2:2:0 units:8:2:2:4 units:8:2:8:0; do
    IFS=: read -r layout readahead layers far depth <<<"$setting"
    file=$model
    [[ $layout == units ]] && file=$work/units.gguf
    "$strata" eval run --suite "$work/suite-$domain.json" -m "$file" --arena 25% \
      --readahead "$readahead" --readahead-layers "$layers" --readahead-far "$far" \
      --io-depth "$depth" -o "$work/arena-$layout-ra$readahead-l$layers-f$far-d$depth-$domain.json" \
      >/dev/null 2>&1
  done
done
# MIN on exactly the tokens the arena decoded: the six teacher-forced held-out documents.
(cd "$work" && "$strata" cachesim $(printf -- '--trace heldout-%s.trace ' chat code en_prose ja \
  json math) --sizes 25% --policies successor,min --json "$work/arena-tokens-min.json" >/dev/null)
python3 - "$work" "$out/heldout.json" "$work/arena-tokens-min.json" >"$out/arena_readahead.md" <<'PY'
import glob, json, sys
work, heldout, same_tokens = sys.argv[1:]
min_at_25 = lambda path: 100 * next(r for r in json.load(open(path))["results"]
                                    if r["policy"] == "min" and r["size"] == "25%")["all"]["hit_rate"]
print("# The arena's read-ahead against MIN\n")
print("Decode steps over the first 1024 tokens of each held-out document, `--arena 25%`, policy")
print("successor; shares of all expert claims. Layout: the bundled file (stacked: a unit is three")
print("reads) or the same model repacked (`strata repack`: one read). Units in flight:")
print("`--io-depth`, default 4 stacked and 12 in the unit layout (6 reads per I/O thread).\n")
print("| layout | read-ahead | layers ahead | farther layer reads | units in flight | hits | timely read-ahead hits | hits + timely | late read-aheads | misses |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
for layout, readahead, layers, far, depth in (
        ("stacked", 0, 1, 0, 0), ("stacked", 8, 1, 0, 0), ("stacked", 8, 2, 2, 0),
        ("stacked", 8, 2, 8, 0), ("stacked", 8, 2, 8, 8), ("stacked", 8, 2, 8, 16),
        ("units", 8, 2, 2, 0), ("units", 8, 2, 2, 4), ("units", 8, 2, 8, 0)):
    total = dict(hits=0, readahead_hits=0, late_readaheads=0, misses=0)
    for path in glob.glob(f"{work}/arena-{layout}-ra{readahead}-l{layers}-f{far}-d{depth}-*.json"):
        experts = json.load(open(path))["candidate_stats"]["decode_experts"]
        for key in total: total[key] += experts[key]
    n = sum(total.values())
    share = {k: 100 * v / n for k, v in total.items()}
    default_depth = 4 if layout == "stacked" else 12
    print(f"| {layout} | {readahead} | {layers if readahead else '-'} | {far if layers > 1 else '-'} | "
          f"{depth if depth else f'{default_depth} (default)'} | {share['hits']:.1f} % | {share['readahead_hits']:.1f} % | "
          f"{share['hits'] + share['readahead_hits']:.1f} % | {share['late_readaheads']:.1f} % | "
          f"{share['misses']:.1f} % |")
print(f"\nBelady's MIN at 25 % (no read-ahead) on the same six documents: {min_at_25(same_tokens):.1f} %; "
      f"on the held-out set with its two generations: {min_at_25(heldout):.1f} %.")
PY
echo "wrote $out/{tuning,heldout,generation-as-arena}.{md,json,svg}, heldout-readahead.md, arena_check.md and arena_readahead.md"

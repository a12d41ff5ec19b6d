#!/bin/bash
# The replacement policies' cost per layer visit (bench/replacement_policy_bench.cpp) with the
# policies of e978ea4 (the successor policy's victim from a heap rebuilt at each layer) and of
# 1b3b7cf (from an array of next uses kept beside the resident units), the same bench source
# compiled against each; three alternating rounds of 5 repetitions, JSON records here.
#   bash bench/results/issue27-policy-victim/run.sh   (from the repository root, after scripts/setup)
set -euo pipefail
root=$PWD; here=$root/bench/results/issue27-policy-victim
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
for commit in e978ea4 1b3b7cf; do
  mkdir -p "$work/$commit"
  git -C "$root" archive "$commit" src include | tar x -C "$work/$commit"
  (cd "$work/$commit" && g++ -O3 -DNDEBUG -std=c++20 -DFMT_SHARED -Isrc -Iinclude \
    -o "$work/bench-$commit" "$root/bench/replacement_policy_bench.cpp" \
    src/experts/{arc,lfu,lrfu,lru,next_use,replacement}_policy.cpp src/experts/successor_ranks.cpp \
    "$root/build/src/base/libstrata_base.a" -lbenchmark -lfmt -lpthread)
done
for round in 1 2 3; do
  for commit in e978ea4 1b3b7cf; do
    "$work/bench-$commit" --benchmark_repetitions=5 --benchmark_report_aggregates_only=true \
      --benchmark_out="$here/$commit-round$round.json" --benchmark_out_format=json > /dev/null
  done
done
python3 - "$here" <<'PY'
import json, pathlib, statistics, sys
here = pathlib.Path(sys.argv[1])
rows = {}
for path in sorted(here.glob("*-round*.json")):
    commit = path.name.split("-")[0]
    for b in json.loads(path.read_text())["benchmarks"]:
        if b.get("aggregate_name") == "median":
            rows.setdefault(b["run_name"], {}).setdefault(commit, []).append(b["real_time"])
lines = ["| policy, arena | e978ea4 µs / visit | 1b3b7cf µs / visit | ratio |", "|---|---:|---:|---:|"]
for name, by in rows.items():
    a, b = statistics.median(by["e978ea4"]), statistics.median(by["1b3b7cf"])
    lines.append(f"| {name.split('/')[-1]} | {a / 1e3:.1f} | {b / 1e3:.1f} | {a / b:.2f}x |")
(here / "summary.md").write_text("\n".join(lines) + "\n")
print("\n".join(lines))
PY

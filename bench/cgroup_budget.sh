#!/usr/bin/env bash
# Checks the memory budget from outside the process: runs `strata run --mem SIZE` inside a
# cgroup-v1 memory cgroup whose limit equals SIZE, then reports the cgroup's peak usage and how
# often the limit was hit (memory.failcnt). Page cache counts against a cgroup, so this also
# shows that streaming reads bypass it (O_DIRECT). With --auto the run gets `--mem auto`
# instead, which must find the cgroup's limit itself (as in a container). Needs root and the v1
# memory controller.
#
#   bench/cgroup_budget.sh [--auto] MODEL SIZE_MIB [extra strata run flags...]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
mem_flag=
if [ "$1" = --auto ]; then mem_flag=auto; shift; fi
model=$1
size_mib=$2
shift 2
cgroup=/sys/fs/cgroup/memory/strata-budget-$$
limit=$((size_mib * 1024 * 1024))
mem_flag=${mem_flag:-${size_mib}M}
mkdir "$cgroup"
trap 'rmdir "$cgroup" 2>/dev/null || true' EXIT
echo "$limit" > "$cgroup/memory.limit_in_bytes"
sync
echo 3 > /proc/sys/vm/drop_caches
stats=$(mktemp)
# --force: mktemp has made the file.
command=$(printf '%q ' "$root/build/strata" run -m "$model" --mem "$mem_flag" --stats "$stats" --force "$@")
sh -c "echo \$\$ > $cgroup/cgroup.procs; exec $command" >/dev/null
peak=$(cat "$cgroup/memory.max_usage_in_bytes")
failcnt=$(cat "$cgroup/memory.failcnt")
python3 - "$stats" "$limit" "$peak" "$failcnt" <<'PY'
import json, sys
stats = json.load(open(sys.argv[1]))
limit, peak, failcnt = map(int, sys.argv[2:5])
print(f"limit {limit/2**20:.0f} MiB | cgroup peak {peak/2**20:.1f} MiB ({100*peak/limit:.1f} %) | "
      f"limit hit {failcnt} times | process peak RSS {stats['peak_rss_bytes']/2**20:.1f} MiB | "
      f"decode {stats['decode_tokens_per_s']:.2f} tok/s, hits {100*stats['experts']['hit_rate']:.1f} %")
PY
rm -f "$stats"

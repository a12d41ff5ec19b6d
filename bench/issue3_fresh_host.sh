#!/usr/bin/env bash
# Issue 3's streaming bench of record on a host that has only a Strata binary: writes the
# 30B-A3B-shaped Q4_0 model, repacks it grouped, and runs `strata bench` over the arena shares
# given (default 25 %), so a second machine's disk and cores can be set beside this one's.
#
#   bench/issue3_fresh_host.sh STRATA WORKDIR OUTDIR [SHARE...]
#
# OUTDIR receives host.txt (processor, memory, disks, file system of WORKDIR), steps.log (each
# step's wall time) and bench-30b-grouped.json (the bench record, with its own provenance).
# WORKDIR needs about 35 GB free while both files exist; the stacked file is deleted after the
# repack.
set -euo pipefail
if (($# < 3)); then
  echo "usage: $0 STRATA WORKDIR OUTDIR [SHARE...]" >&2
  exit 2
fi
strata=$1 workdir=$2 outdir=$3
shift 3
shares=("$@")
((${#shares[@]})) || shares=(25%)
mkdir -p "$workdir" "$outdir"
stacked=$workdir/synth-30b-a3b-q4_0.gguf
grouped=$workdir/synth-30b-a3b-q4_0-grouped.gguf

{
  uname -a
  echo "cores: $(nproc)"
  grep -m1 "model name" /proc/cpuinfo || true
  echo "simd: $(grep -m1 -o -w -E 'avx2|avx512f|avx512_vnni' /proc/cpuinfo | sort -u | tr '\n' ' ')"
  grep -E "MemTotal|MemAvailable" /proc/meminfo
  df -h "$workdir"
  findmnt -T "$workdir" || true
  lsblk -o NAME,SIZE,ROTA,TYPE,MOUNTPOINT 2>/dev/null || true
} >"$outdir/host.txt" 2>&1

step() {
  local name=$1
  shift
  local start=$SECONDS
  "$@"
  echo "$name: $((SECONDS - start)) s" | tee -a "$outdir/steps.log"
}

# --force: what an earlier run of this script left in WORKDIR and OUTDIR is replaced.
step make-model "$strata" make-model --arch qwen3moe --preset 30b-a3b --type q4_0 --force -o "$stacked"
step repack "$strata" repack --grouped --force -m "$stacked" -o "$grouped"
rm -f "$stacked"
step sync sync
# The bench reads experts with O_DIRECT, but the dense weights and the file's hash go through
# the page cache: start every host from the same cold state.
echo 3 >/proc/sys/vm/drop_caches 2>/dev/null || echo "note: page cache not dropped (not root)"
step bench "$strata" bench -m "$grouped" --mem "${shares[@]}" --prompt-tokens 64 -n 32 -r 3 \
  --force -o "$outdir/bench-30b-grouped.json"

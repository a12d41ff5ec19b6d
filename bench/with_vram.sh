# Sourced by the device machine's bench scripts (bench/results/*/run.sh):
#   with_vram NAME COMMAND...   runs COMMAND and appends "NAME rc=N vram_peak_mib=P" to
#                               $W/vram.txt, P the peak of nvidia-smi's memory.used over the
#                               command (polled every 0.2 s) less what was used before it, in MiB.
with_vram() {
  local name=$1; shift
  local base
  base=$(nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits | head -1)
  echo "$base" > "$W/$name.vram"  # a command that ends before the first poll peaks at its base
  ( while true; do nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits | head -1; sleep 0.2; done ) >> "$W/$name.vram" &
  local poll=$!
  "$@"
  local rc=$?
  kill $poll; wait $poll 2>/dev/null
  echo "$name rc=$rc vram_peak_mib=$(( $(sort -n "$W/$name.vram" | tail -1) - base ))" >> "$W/vram.txt"
  rm -f "$W/$name.vram"
}

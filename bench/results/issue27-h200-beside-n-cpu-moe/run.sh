#!/bin/bash
# The VRAM arena beside llama.cpp's --n-cpu-moe on the H200, in one run: the 30B-A3B shape
# (Q4_0), `llama-bench -ngl 99 --n-cpu-moe N -p 512 -n 128 -r 3` for N = 0, 24 and 36 of its 48
# layers (all, half and a quarter of the experts in VRAM) against `strata bench --device cuda
# --prompt-tokens 512 -n 128 -r 3 --mem P%` (arenas of P = 100, 50 and 25 %), each engine's VRAM read by
# nvidia-smi every 0.2 s (and Strata's own peak_device_bytes); strata-a and strata-c are two
# builds of Strata (strata-c claims a layer's late experts together). Then the disk tier
# (--device cuda --mem SIZE): logits of 12 tokens by sha256 against every expert in VRAM and the
# host tier, and decode at host arenas of every expert, about a third and almost none.
# Carried in .device-carry: bin.tar.xz (strata-a, strata-c), llama.tar.xz (llcuda/: llama-bench
# and its libraries), lib/ (Strata's shared libraries). Records go to /tmp/res, packed into
# $OUT/results.tar after every step.
set -u
R=$PWD
tar xJf .device-carry/bin.tar.xz -C "$R"
tar xJf .device-carry/llama.tar.xz -C /tmp
export LD_LIBRARY_PATH=$R/.device-carry/lib:${LD_LIBRARY_PATH:-}
W=/tmp/res
mkdir -p $W
pack() { tar cf $OUT/results.tar -C $W .; }
# cuBLAS and the CUDA runtime come from the device's own CUDA installation.
LLAMA_LIBS=/tmp/llcuda:$R/.device-carry/lib:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name,memory.total,memory.used,driver_version --format=csv > $W/gpu.txt 2>&1
M=/tmp/m30.gguf
[ -f $M ] || ( time $R/strata-a make-model --preset 30b-a3b --type q4_0 --stats-tokens 0 -o $M ) > $W/make.txt 2>&1
ls -la $M >> $W/make.txt; pack
. "$R/bench/with_vram.sh"
for n in 0 24 36; do
  with_vram llama-ncmoe$n env LD_LIBRARY_PATH=$LLAMA_LIBS timeout 150 /tmp/llcuda/llama-bench -m $M -ngl 99 --n-cpu-moe $n -p 512 -n 128 -r 3 -o json > $W/llama-ncmoe$n.json 2> $W/llama-ncmoe$n.err
  pack
done
for a in 100 50 25; do
  for bin in a c; do
    [ $bin = c ] && [ $a = 100 ] && continue
    with_vram strata-$bin-arena$a timeout 150 $R/strata-$bin bench -m $M --device cuda --prompt-tokens 512 -n 128 -r 3 --mem $a% -o $W/strata-$bin-arena$a.json > $W/strata-$bin-arena$a.txt 2>&1
    pack
  done
done
echo '[1, 200, 3000, 17, 5, 99, 1024, 8, 4000, 12, 640, 77]' > /tmp/tok.json
for a in "" "--gpu-mem 6G" "--mem 24G --gpu-mem 6G" "--mem 8G --gpu-mem 6G" "--mem 3G --gpu-mem 6G --io-threads 4"; do
  timeout 120 $R/strata-a logits -m $M --device cuda --tokens /tmp/tok.json --prefill-chunk 1 --force --out /tmp/l.bin $a > /dev/null 2>> $W/logits.txt
  echo "'$a': rc=$? $(sha256sum /tmp/l.bin | cut -c1-16)" >> $W/logits.txt
  rm -f /tmp/l.bin
done
grep "^'" $W/logits.txt; pack
P="The history of the expert arena begins with a simple observation about mixture of experts models: each token touches only a few experts, so"
for rep in 1 2; do
  for a in "--mem 24G --gpu-mem 6G" "--mem 8G --gpu-mem 6G" "--mem 3G --gpu-mem 6G --io-threads 8"; do
    tag=$(echo "disk r$rep $a" | tr -c 'a-zA-Z0-9\n' '_')
    echo "== rep $rep '$a'" >> $W/disk-speed.txt
    timeout 100 $R/strata-a run -m $M --device cuda -p "$P" -n 128 --temp 0 $a --stats $W/$tag.json --force > /dev/null 2>> $W/disk-speed.txt
  done
  pack
done
grep -E "vram_peak" $W/vram.txt
python3 - $W <<'PY'
import json, glob, sys, os
w = sys.argv[1]
for f in sorted(glob.glob(w + "/llama-*.json")):
    try:
        for e in json.load(open(f)): print(os.path.basename(f), "pp" if e["n_gen"] == 0 else "tg", round(e["avg_ts"], 1))
    except Exception as x: print(f, "unreadable", x)
for f in sorted(glob.glob(w + "/strata-*.json")):
    j = json.load(open(f)); r = j["results"][0]
    print(os.path.basename(f), "pp", round(r["prefill_tokens_per_s"]["median"], 1), "tg", round(r["decode_tokens_per_s"]["median"], 1), "peak_dev_MiB", round(j.get("peak_device_bytes", 0) / 2**20))
for f in sorted(glob.glob(w + "/disk_*.json")):
    j = json.load(open(f))
    print(os.path.basename(f), "decode", round(j.get("decode_tokens_per_s", 0), 2), "peak_rss_GiB", round(j.get("peak_rss_bytes", 0) / 2**30, 2))
PY
grep -E "^== |decode|experts:" $W/disk-speed.txt | sed -e 's/(.*misses: read on demand)//' | cut -c1-250
pack

#!/bin/bash
# Thread scaling of Strata and llama.cpp v0.5.0 (CPU build, every CPU variant, loaded at run
# time) on the H200 host's 16 Xeon vCPUs, side by side (bench/thread_scaling.py); no GPU used.
#   run.sh tiny-scaling        strata-tiny-moe over 1, 2, 4, 8, 16 threads, both engines
#   run.sh tiny-ab             the binary before the row-wise change against after, 16 and 2
#                              threads, 3 alternated rounds
#   run.sh 30b-scaling         the 30B-A3B shape (Q4_0) over 16, 8, 4, 2, 1 threads, both engines
#   run.sh 30b-strata T...     the same Strata runs alone at thread counts T
#   run.sh 30b-counters        thread-pool counters at 16 threads (strata-trace): load and probes
#                              alone (prompt 1, one token), decode (prompt 16, 128 tokens),
#                              prefill (prompt 512, one token)
#   run.sh 30b-streamed        16 threads, every expert resident and 50 % / 25 % arenas (the file
#                              in the page cache)
# Binaries come in .device-carry: bin.tar.xz (build/strata; build/strata-base, the binary before
# the change; build/strata-trace, build/strata with pool-counters.patch applied), lib/,
# llama-cpu.tar.xz (llama-bench and its libraries under llcpu/). Records are written to /tmp/res
# and packed into $OUT/results.tar after every step (a device run brings back only a few files).
set -u
R=$PWD
tar xJf .device-carry/bin.tar.xz -C "$R"
[ -d /tmp/llcpu ] || tar xJf .device-carry/llama-cpu.tar.xz -C /tmp
export LD_LIBRARY_PATH=$R/.device-carry/lib:/tmp/llcpu:${LD_LIBRARY_PATH:-}
export CUDA_VISIBLE_DEVICES=
B=$R/build
L=/tmp/llcpu/llama-bench
W=/tmp/res
TINY=$R/models/strata-tiny-moe-q4_0.gguf
M30=/tmp/30b-q4_0.gguf
mkdir -p $W
pack() { tar cf $OUT/results.tar -C $W .; }
lscpu > $W/lscpu.txt
# llama.cpp loads the CPU variant that scores best on this CPU; one that stops on an illegal
# instruction (here the Sapphire Rapids one: AMX) goes aside and the next best is used.
for attempt in 1 2 3; do
  $L -m $TINY -p 16 -n 0 -r 1 > /dev/null 2> $W/llama-variant-$attempt.txt && break
  variant=$(grep -o "libggml-cpu-[a-z0-9_]*\.so" $W/llama-variant-$attempt.txt | head -1)
  echo "$variant failed, set aside" >> $W/llama-variant-$attempt.txt
  mv /tmp/llcpu/$variant /tmp/llcpu/$variant.aside
done
pack
[ "$1" = tiny-scaling ] || [ "$1" = tiny-ab ] || [ -f $M30 ] ||
  $B/strata make-model --preset 30b-a3b --type q4_0 --stats-tokens 0 -o $M30 > $W/make-30b.txt 2>&1
case "$1" in
  tiny-scaling)
    python3 bench/thread_scaling.py $L $B/strata $W tiny=$TINY 512 128 1 2 4 8 16 > $W/tiny.txt 2>&1
    tail -12 $W/tiny.txt ;;
  tiny-ab)
    for t in 16 2; do
      python3 bench/alternate_binaries.py $B/strata-base $B/strata $W ab-tiny-t$t 3 -- -m $TINY --device cpu -t $t --prompt-tokens 512 -n 128 -r 3 > $W/ab-tiny-t$t.txt 2>&1
      pack; tail -5 $W/ab-tiny-t$t.txt
    done ;;
  30b-scaling)
    python3 bench/thread_scaling.py $L $B/strata $W 30b=$M30 128 32 16 8 4 2 1 > $W/30b.txt 2>&1
    tail -12 $W/30b.txt ;;
  30b-strata)
    shift
    for t in "$@"; do
      $B/strata bench -m $M30 --device cpu -t $t --prompt-tokens 128 -n 32 -r 3 -o $W/30b-t$t-strata.json > $W/30b-t$t-strata.txt 2>&1
      pack
    done ;;
  30b-counters)
    for run in "load 1 1" "decode 16 128" "prefill 512 1"; do
      set -- $run
      STRATA_POOL_TRACE=1 $B/strata-trace bench -m $M30 --device cpu -t 16 --prompt-tokens $2 -n $3 -r 3 > $W/trace-30b-t16-$1.txt 2>&1
      pack
    done
    grep -h pool-trace $W/trace-* ;;
  30b-streamed)
    $B/strata bench -m $M30 --device cpu -t 16 --mem none 50% 25% --prompt-tokens 128 -n 32 -r 3 -o $W/30b-streamed-t16.json > $W/30b-streamed-t16.txt 2>&1
    tail -6 $W/30b-streamed-t16.txt ;;
esac
pack

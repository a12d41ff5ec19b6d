#!/usr/bin/env python3
"""llama.cpp's llama-bench and `strata bench` side by side on one model: rounds that alternate.

  bench/beside_llama_cpp.py LLAMA_BENCH STRATA MODEL OUTDIR ROUNDS DEVICE [THREADS]
  bench/beside_llama_cpp.py --summarize OUTDIR

Each round runs `LLAMA_BENCH -m MODEL -p 512 -n 128 -r 3 -o json` (with -ngl 99 for DEVICE cuda,
-ngl 0 and -t THREADS for cpu) and `STRATA bench -m MODEL --device DEVICE --prompt-tokens 512
-n 128 -r 3`, llama.cpp first in odd rounds and Strata first in even ones, records in OUTDIR.
Then prints, for prefill (pp512) and decode (tg128), each engine's median over the rounds of its
per-round means (llama-bench) or medians (strata bench) and the ratio Strata / llama.cpp.
llama.cpp is built elsewhere (its source is not part of this project); pass its binary by path.
"""
import json
import pathlib
import statistics
import subprocess
import sys


def llama_command(llama_bench, model, device, threads):
    command = [llama_bench, "-m", model, "-p", "512", "-n", "128", "-r", "3", "-o", "json"]
    command += ["-ngl", "99"] if device == "cuda" else ["-ngl", "0"]
    if threads:
        command += ["-t", str(threads)]
    return command


def strata_command(strata, model, device, threads, out):
    command = [strata, "bench", "-m", model, "--device", device, "--prompt-tokens", "512", "-n",
               "128", "-r", "3", "-o", str(out)]
    if threads:
        command += ["--threads", str(threads)]
    return command


def run_rounds(llama_bench, strata, model, outdir, rounds, device, threads):
    outdir.mkdir(parents=True, exist_ok=True)
    for round_index in range(1, rounds + 1):
        order = ("llama", "strata") if round_index % 2 else ("strata", "llama")
        for engine in order:
            print(f"round {round_index}/{rounds}: {engine}", file=sys.stderr)
            out = outdir / f"{engine}-{round_index}.json"
            if engine == "llama":
                with open(out, "w") as stdout:
                    subprocess.run(llama_command(llama_bench, model, device, threads),
                                   stdout=stdout, check=True)
            else:
                subprocess.run(strata_command(strata, model, device, threads, out), check=True,
                               stdout=subprocess.DEVNULL)


def llama_rates(record):
    rates = {}
    for entry in json.loads(record.read_text()):
        metric = "prefill" if entry["n_gen"] == 0 else "decode"
        rates[metric] = entry["avg_ts"]
    return rates


def strata_rates(record):
    result = json.loads(record.read_text())["results"][0]
    return {"prefill": result["prefill_tokens_per_s"]["median"],
            "decode": result["decode_tokens_per_s"]["median"]}


def summarize(outdir):
    rates = {"llama": [], "strata": []}
    for engine, read in (("llama", llama_rates), ("strata", strata_rates)):
        for record in sorted(outdir.glob(f"{engine}-*.json")):
            rates[engine].append(read(record))
    print("| metric | llama.cpp tok/s | Strata tok/s | Strata / llama.cpp |")
    print("|---|---:|---:|---:|")
    for metric, label in (("prefill", "prefill (pp512)"), ("decode", "decode (tg128)")):
        llama = statistics.median(r[metric] for r in rates["llama"])
        strata = statistics.median(r[metric] for r in rates["strata"])
        print(f"| {label} | {llama:.1f} | {strata:.1f} | {strata / llama:.3f} |")


def main(argv):
    if len(argv) == 3 and argv[1] == "--summarize":
        summarize(pathlib.Path(argv[2]))
        return 0
    if len(argv) not in (7, 8):
        print(__doc__, file=sys.stderr)
        return 2
    llama_bench, strata, model, outdir, rounds, device = argv[1:7]
    threads = int(argv[7]) if len(argv) == 8 else 0
    run_rounds(llama_bench, strata, model, pathlib.Path(outdir), int(rounds), device, threads)
    summarize(pathlib.Path(outdir))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

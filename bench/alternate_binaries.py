#!/usr/bin/env python3
"""`strata bench` of two binaries side by side: rounds that alternate OLD and NEW.

  bench/alternate_binaries.py OLD NEW OUTDIR LABEL ROUNDS -- BENCH_ARGUMENTS...
  bench/alternate_binaries.py --summarize OUTDIR LABEL

Each round runs `OLD bench BENCH_ARGUMENTS -o OUTDIR/LABEL-old-R.json` and the same with NEW,
OLD first in odd rounds and NEW first in even ones, so that both binaries see the same drift of
a shared host. Before each run the load average goes to OUTDIR/LABEL-load.txt. Then, for every
configuration of the records (model, memory budget, prompt length) and for prefill and decode
speed and decode's compute time a token, prints a Markdown table: each binary's median over the rounds of its per-round medians,
the range of those, and NEW/OLD, the ratio of the two medians with the range of the per-round
ratios. --summarize prints the table again from the records already in OUTDIR.
"""
import json
import pathlib
import statistics
import subprocess
import sys

SIDES = ("old", "new")
# Decode's compute time leaves out the waits for expert reads, which follow the disk's drift.
METRICS = (("prefill_tokens_per_s", "prefill tok/s"), ("decode_tokens_per_s", "decode tok/s"),
           ("decode_compute_ms_per_token", "decode compute ms/token"))


def record_path(outdir, label, side, round_index):
    return outdir / f"{label}-{side}-{round_index}.json"


def run_rounds(binaries, outdir, label, rounds, bench_arguments):
    outdir.mkdir(parents=True, exist_ok=True)
    for round_index in range(1, rounds + 1):
        order = SIDES if round_index % 2 else tuple(reversed(SIDES))
        for side in order:
            out = record_path(outdir, label, side, round_index)
            load = pathlib.Path("/proc/loadavg").read_text().split()[:3]
            with open(outdir / f"{label}-load.txt", "a") as log:
                log.write(f"round {round_index} {side}: load average {' '.join(load)}\n")
            print(f"round {round_index}/{rounds}: {side} (load {' '.join(load)})", file=sys.stderr)
            command = [binaries[side], "bench", *bench_arguments, "-o", str(out)]
            try:
                status = subprocess.run(command, stdout=subprocess.DEVNULL).returncode
            except OSError as error:
                print(f"alternate_binaries: {binaries[side]}: {error.strerror}", file=sys.stderr)
                return False
            if status != 0:
                print(f"alternate_binaries: {' '.join(command)}: exit {status}", file=sys.stderr)
                return False
    return True


def configuration(result):
    return (pathlib.Path(result["model"]["path"]).name, result["memory_budget"],
            result["prompt_tokens"])


def per_round_medians(outdir, label):
    """{configuration: {metric: {side: [median of round 1, ...]}}} and the number of rounds."""
    table = {}
    rounds = 0
    while all(record_path(outdir, label, side, rounds + 1).exists() for side in SIDES):
        rounds += 1
        for side in SIDES:
            record = json.loads(record_path(outdir, label, side, rounds).read_text())
            for result in record["results"]:
                metrics = table.setdefault(configuration(result), {})
                for metric, _ in METRICS:
                    sides = metrics.setdefault(metric, {s: [] for s in SIDES})
                    sides[side].append(result[metric]["median"])
    return table, rounds


def summarize(outdir, label):
    table, rounds = per_round_medians(outdir, label)
    if rounds == 0:
        print(f"alternate_binaries: no rounds of {label} in {outdir}", file=sys.stderr)
        return 1
    print(f"{label}: {rounds} rounds; each figure a binary's median over the rounds of its "
          "per-round medians (range of those)\n")
    print("| model | memory | prompt | metric | old | new | new/old (per-round range) |")
    print("|---|---|---:|---|---:|---:|---:|")
    for (model, budget, prompt), metrics in table.items():
        for metric, title in METRICS:
            old, new = metrics[metric]["old"], metrics[metric]["new"]
            ratios = [n / o for o, n in zip(old, new)]
            cells = [f"{statistics.median(v):.2f} ({min(v):.2f}–{max(v):.2f})" for v in (old, new)]
            ratio = statistics.median(new) / statistics.median(old)
            print(f"| {model} | {budget} | {prompt} | {title} | {cells[0]} | {cells[1]} | "
                  f"{ratio:.3f} ({min(ratios):.3f}–{max(ratios):.3f}) |")
    return 0


def main(argv):
    if len(argv) == 3 and argv[0] == "--summarize":
        return summarize(pathlib.Path(argv[1]), argv[2])
    if len(argv) < 6 or argv[5] != "--" or not argv[4].isdigit() or int(argv[4]) < 1:
        print("usage:\n" + __doc__.strip().split("\n\n")[1], file=sys.stderr)
        return 2
    old, new, outdir, label, rounds = argv[:5]
    outdir = pathlib.Path(outdir)
    if any(outdir.glob(f"{label}-*")):
        print(f"alternate_binaries: {outdir} already holds {label}'s records", file=sys.stderr)
        return 1
    if not run_rounds({"old": old, "new": new}, outdir, label, int(rounds), argv[6:]):
        return 1
    return summarize(outdir, label)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

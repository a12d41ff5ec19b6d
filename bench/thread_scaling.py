#!/usr/bin/env python3
"""llama.cpp's llama-bench and `strata bench` on the CPU over thread counts, side by side.

  bench/thread_scaling.py LLAMA_BENCH STRATA OUTDIR NAME=MODEL PROMPT GEN THREADS...
  bench/thread_scaling.py --summarize OUTDIR

For each thread count T (in the order given), runs `LLAMA_BENCH -m MODEL -ngl 0 -t T -p PROMPT
-n GEN -r 3 -o json` and `STRATA bench -m MODEL --device cpu -t T --prompt-tokens PROMPT -n GEN
-r 3`, llama.cpp first at odd positions of the list and Strata first at even ones. Records go to
OUTDIR as NAME-tT-llama.json and NAME-tT-strata.json (one folder, no subfolders). Then writes
OUTDIR/scaling.json (every model and thread count: prefill and decode tok/s of both engines,
the ratios, and each engine's speed-up over its own rate at the fewest threads),
OUTDIR/scaling.md (the same as tables) and OUTDIR/NAME-scaling.svg (tok/s against threads).
`--summarize` rewrites those three from the records already in OUTDIR.
llama.cpp is built elsewhere (its source is not part of this project); pass its binary by path.
"""
import json
import pathlib
import re
import subprocess
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from beside_llama_cpp import llama_rates, strata_rates  # noqa: E402

RECORD = re.compile(r"^(?P<name>.+)-t(?P<threads>\d+)-(?P<engine>llama|strata)\.json$")
COLORS = {"llama": "#d62728", "strata": "#1f77b4"}


def run(llama_bench, strata, outdir, name, model, prompt, gen, thread_counts):
    outdir.mkdir(parents=True, exist_ok=True)
    for position, threads in enumerate(thread_counts):
        order = ("llama", "strata") if position % 2 == 0 else ("strata", "llama")
        for engine in order:
            print(f"{name}: {threads} threads, {engine}", file=sys.stderr, flush=True)
            out = outdir / f"{name}-t{threads}-{engine}.json"
            if engine == "llama":
                command = [llama_bench, "-m", model, "-ngl", "0", "-t", str(threads), "-p",
                           str(prompt), "-n", str(gen), "-r", "3", "-o", "json"]
                with open(out, "w") as stdout:
                    subprocess.run(command, stdout=stdout, check=True)
            else:
                command = [strata, "bench", "-m", model, "--device", "cpu", "-t", str(threads),
                           "--prompt-tokens", str(prompt), "-n", str(gen), "-r", "3", "-o",
                           str(out)]
                subprocess.run(command, stdout=subprocess.DEVNULL, check=True)


def collect(outdir):
    """{name: {threads: {engine: {"prefill": tok/s, "decode": tok/s}}}}"""
    table = {}
    for record in sorted(outdir.iterdir()):
        match = RECORD.match(record.name)
        if not match:
            continue
        read = llama_rates if match["engine"] == "llama" else strata_rates
        rates = table.setdefault(match["name"], {}).setdefault(int(match["threads"]), {})
        rates[match["engine"]] = read(record)
    return table


def rows_of(table):
    rows = []
    for name, by_threads in table.items():
        counts = sorted(t for t, r in by_threads.items() if {"llama", "strata"} <= r.keys())
        if not counts:
            continue
        base = by_threads[counts[0]]
        for threads in counts:
            r = by_threads[threads]
            row = {"model": name, "threads": threads}
            for metric in ("prefill", "decode"):
                llama, strata = r["llama"][metric], r["strata"][metric]
                row[metric] = {
                    "llama": llama, "strata": strata, "ratio": strata / llama,
                    "llama_speedup": llama / base["llama"][metric],
                    "strata_speedup": strata / base["strata"][metric]}
            rows.append(row)
    return rows


def markdown(rows):
    lines = []
    for name in dict.fromkeys(row["model"] for row in rows):
        lines += [f"### {name}", "",
                  "| threads | decode llama.cpp | decode Strata | ratio | prefill llama.cpp "
                  "| prefill Strata | ratio |",
                  "|---:|---:|---:|---:|---:|---:|---:|"]
        for row in (r for r in rows if r["model"] == name):
            d, p = row["decode"], row["prefill"]
            lines.append(
                f"| {row['threads']} | {d['llama']:.1f} ({d['llama_speedup']:.2f}x) "
                f"| {d['strata']:.1f} ({d['strata_speedup']:.2f}x) | {d['ratio']:.2f} "
                f"| {p['llama']:.1f} ({p['llama_speedup']:.2f}x) "
                f"| {p['strata']:.1f} ({p['strata_speedup']:.2f}x) | {p['ratio']:.2f} |")
        lines.append("")
    lines.append("(In brackets: the speed-up over the same engine at the fewest threads.)")
    return "\n".join(lines) + "\n"


def svg_chart(name, rows):
    """Two panels, decode and prefill: tok/s against threads (log2 axis), one line an engine."""
    width, height, margin = 360, 260, 50
    parts = []
    for panel, metric in enumerate(("decode", "prefill")):
        x0 = panel * (width + 20)
        threads = [r["threads"] for r in rows]
        values = [r[metric][e] for r in rows for e in ("llama", "strata")]
        top = max(values) * 1.1
        span = max(1, len(threads) - 1)

        def point(i, value):
            x = x0 + margin + (width - margin - 10) * i / span
            y = height - margin - (height - 2 * margin) * value / top
            return x, y

        parts.append(f'<text x="{x0 + width / 2}" y="20" text-anchor="middle" '
                     f'font-size="14">{name}: {metric} tok/s</text>')
        parts.append(f'<line x1="{x0 + margin}" y1="{height - margin}" x2="{x0 + width - 10}" '
                     f'y2="{height - margin}" stroke="black"/>')
        parts.append(f'<line x1="{x0 + margin}" y1="{margin}" x2="{x0 + margin}" '
                     f'y2="{height - margin}" stroke="black"/>')
        for tick in range(5):
            value = top * tick / 4
            _, y = point(0, value)
            parts.append(f'<text x="{x0 + margin - 4}" y="{y + 4}" text-anchor="end" '
                         f'font-size="10">{value:.0f}</text>')
        for i, t in enumerate(threads):
            x, _ = point(i, 0)
            parts.append(f'<text x="{x}" y="{height - margin + 14}" text-anchor="middle" '
                         f'font-size="10">{t}</text>')
        parts.append(f'<text x="{x0 + width / 2}" y="{height - 12}" text-anchor="middle" '
                     f'font-size="11">threads</text>')
        for k, engine in enumerate(("llama", "strata")):
            points = [point(i, r[metric][engine]) for i, r in enumerate(rows)]
            path = " ".join(f"{x:.1f},{y:.1f}" for x, y in points)
            parts.append(f'<polyline points="{path}" fill="none" stroke="{COLORS[engine]}" '
                         f'stroke-width="2"/>')
            for x, y in points:
                parts.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3" '
                             f'fill="{COLORS[engine]}"/>')
            label = "llama.cpp" if engine == "llama" else "Strata"
            parts.append(f'<text x="{x0 + margin + 10}" y="{margin + 14 * k}" font-size="11" '
                         f'fill="{COLORS[engine]}">{label}</text>')
    total_width = 2 * width + 20
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{total_width}" height="{height}" '
            f'font-family="sans-serif"><rect width="100%" height="100%" fill="white"/>'
            + "".join(parts) + "</svg>\n")


def summarize(outdir):
    rows = rows_of(collect(outdir))
    (outdir / "scaling.json").write_text(json.dumps(rows, indent=1) + "\n")
    text = markdown(rows)
    (outdir / "scaling.md").write_text(text)
    for name in dict.fromkeys(row["model"] for row in rows):
        chart = svg_chart(name, [r for r in rows if r["model"] == name])
        (outdir / f"{name}-scaling.svg").write_text(chart)
    print(text)


def main(argv):
    if len(argv) == 3 and argv[1] == "--summarize":
        summarize(pathlib.Path(argv[2]))
        return 0
    if len(argv) < 8 or "=" not in argv[4]:
        print(__doc__, file=sys.stderr)
        return 2
    llama_bench, strata, outdir = argv[1], argv[2], pathlib.Path(argv[3])
    name, model = argv[4].split("=", 1)
    prompt, gen = int(argv[5]), int(argv[6])
    run(llama_bench, strata, outdir, name, model, prompt, gen, [int(t) for t in argv[7:]])
    summarize(outdir)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

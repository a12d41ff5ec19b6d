#!/usr/bin/env python3
"""Medians over the rounds of each binary and setting in the folders of `run --stats` records
given (default: async/ and heap/ beside this file): decode tok/s, ms per decoded token, of it
waiting for the device (decode_device_wait_ms) and for expert copies (host_wait_ms), and MB
copied per decoded token.

    python3 summarize.py [FOLDER...]
"""
import glob
import json
import os
import re
import statistics
import sys

here = os.path.dirname(os.path.abspath(__file__))
for folder in sys.argv[1:] or [os.path.join(here, "async"), os.path.join(here, "heap")]:
    rows = {}
    for path in sorted(glob.glob(os.path.join(folder, "*.json"))):
        run = json.load(open(path))
        decode = [s for s in run["steps"] if s["phase"] == "decode"]
        n = run["decode_tokens"]
        rows.setdefault(re.sub(r"_r\d_", "_", os.path.basename(path))[:-5], []).append((
            run["decode_tokens_per_s"], run["decode_ms"] / n,
            run.get("decode_device_wait_ms", float("nan")) / n,
            sum(s["experts"]["host_wait_ms"] for s in decode) / n,
            sum(s["experts"]["bytes_read"] for s in decode) / n / 1e6))
    print(f"{folder}/")
    print("| run | decode tok/s (rounds) | ms/token | device wait | copy wait | MB copied/token |")
    print("|---|---|---:|---:|---:|---:|")
    for name, runs in rows.items():
        med = [statistics.median(r[i] for r in runs) for i in range(5)]
        rounds = ", ".join(f"{r[0]:.1f}" for r in runs)
        print(f"| {name} | {med[0]:.1f} ({rounds}) | {med[1]:.2f} | {med[2]:.2f} | {med[3]:.3f} | "
              f"{med[4]:.0f} |")

"""Writes a fuzz target's seed corpus: one file per seed under fuzz/corpus/TARGET."""

import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def write_seeds(target, seeds, suffix=""):
    out = os.path.join(ROOT, "fuzz", "corpus", target)
    os.makedirs(out, exist_ok=True)
    for name, data in seeds.items():
        with open(os.path.join(out, name + suffix), "wb") as f:
            f.write(data)
    print(f"wrote {len(seeds)} seeds to {out}")

#!/usr/bin/env python3
"""Writes the seed corpus for eval_files_fuzz into fuzz/corpus/eval_files/.

Each seed is one selector byte (0: evaluation suite, 1: `strata eval run` record) and a file:
a valid suite and record, and near-valid ones broken in one way each. Written with json,
independently of Strata's writers; the suite's fields as in src/eval/suite.h, the record's as
src/eval/run_record.cpp reads them. Usage: fuzz/make_eval_files_corpus.py (overwrites the seeds).
"""
import json
import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "fuzz", "corpus", "eval_files")
SUITE, RECORD = b"\x00", b"\x01"


def window(**fields):
    w = {"id": "code-000", "domain": "code", "document": "doc-1", "source": "code.jsonl",
         "source_sha256": "ab" * 32, "start": 3, "prompt": 8, "scored": 16,
         "tokens_fnv1a64": "0123456789abcdef"}
    w.update(fields)
    return {k: v for k, v in w.items() if v is not None}


def suite(windows=None, **fields):
    doc = {"format": "strata-eval-suite", "version": 1, "eval_dir": "../shared/eval",
           "tokenizer": {"path": "model.gguf", "n_tokens": 151936}, "seed": 7,
           "windows_per_domain": 2, "prompt": 8, "scored": 16,
           "windows": windows if windows is not None else [window(), window(id="code-001")]}
    doc.update(fields)
    return SUITE + json.dumps({k: v for k, v in doc.items() if v is not None}).encode()


def run_window(**fields):
    w = {"id": "code-000", "domain": "code", "positions": 16, "kld_sum": 0.25,
         "cand_nll_sum": 30.5, "top1_count": 14}
    w.update(fields)
    return {k: v for k, v in w.items() if v is not None}


def record(windows=None, **fields):
    doc = {"tool": "strata eval", "version": 1, "candidate": {"model": "m.gguf", "mem": "4G"},
           "reference": {"model": "r.gguf"},
           "windows": windows if windows is not None else [run_window(),
                                                            run_window(id="code-001")]}
    doc.update(fields)
    return RECORD + json.dumps({k: v for k, v in doc.items() if v is not None}).encode()


SEEDS = {
    "suite": suite(),
    "bad_suite_version": suite(version=2),
    "bad_suite_no_windows": suite(windows=[]),
    "bad_suite_window_id_twice": suite(windows=[window(), window()]),
    "bad_suite_window_id_path": suite(windows=[window(id="../x")]),
    "bad_suite_seed_negative": suite(seed=-1),
    "bad_suite_seed_float": suite(seed=1e300),
    "bad_suite_tokenizer_string": suite(tokenizer="model.gguf"),
    "bad_suite_prompt_zero": suite(windows=[window(prompt=0)]),
    "bad_suite_start_string": suite(windows=[window(start="3")]),
    "record": record(),
    "bad_record_tool": record(tool="strata bench"),
    "bad_record_candidate_string": record(candidate="m.gguf"),
    "bad_record_no_positions": record(windows=[run_window(positions=0)]),
    "bad_record_positions_float": record(windows=[run_window(positions=1e300)]),
    "bad_record_window_missing_kld": record(windows=[run_window(kld_sum=None)]),
    "bad_record_windows_object": record(windows={"code-000": run_window()}),
    "bad_record_id_with_newline": record(windows=[run_window(id="a\nb", positions=0)]),
}

if __name__ == "__main__":
    os.makedirs(OUT, exist_ok=True)
    for name, data in SEEDS.items():
        with open(os.path.join(OUT, name), "wb") as f:
            f.write(data)
    print(f"wrote {len(SEEDS)} seeds to {OUT}")

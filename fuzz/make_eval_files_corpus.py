#!/usr/bin/env python3
"""Writes the seed corpus for eval_files_fuzz into fuzz/corpus/eval_files/.

Each seed is one selector byte (0: evaluation suite, 1: `strata eval run` record, 2: reference
manifest, 3: top-K rows, 4: full rows) and a file; rows have three shape bytes before the file
(scored = b1 % 4, then for top-K rows top_k = 1 + b3 % 4 and n_vocab = top_k + b2 % 3, for full
rows fed = scored + b2 % 3 and n_vocab = 1 + b3 % 4, as fuzz/eval_files_fuzz.cpp reads them).
Valid files, and near-valid ones broken in one way each. Written with json and struct,
independently of Strata's writers; the suite's fields as in src/eval/suite.h, the record's as
src/eval/run_record.cpp reads them, the reference's as src/eval/reference_logits.h describes
them. Usage: fuzz/make_eval_files_corpus.py (overwrites the seeds).
"""
import json
import math
import struct

from seed_corpus import write_seeds

SUITE, RECORD, MANIFEST, TOP_K, FULL = b"\x00", b"\x01", b"\x02", b"\x03", b"\x04"


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


def manifest(windows=None, **fields):
    """Checked against the fuzz target's suite: code-000 and code-001, 16 scored tokens each."""
    doc = {"format": "strata-eval-reference", "version": 1, "n_vocab": 1000, "top_k": 0,
           "reference": {"model": "r.gguf", "sha256": "cd" * 32},
           "windows": windows if windows is not None else [
               {"id": "code-000", "tokens_fnv1a64": "0123456789abcdef", "scored": 16},
               {"id": "code-001", "tokens_fnv1a64": "fedcba9876543210", "scored": 16}]}
    doc.update(fields)
    return MANIFEST + json.dumps({k: v for k, v in doc.items() if v is not None}).encode()


def top_k_rows(rows):
    """Two rows of top-3 over a vocabulary of 5: shape bytes (2, 2, 2)."""
    data = b""
    for next_log_prob, entries in rows:
        data += struct.pack("<f", next_log_prob)
        for token, log_prob in entries:
            data += struct.pack("<if", token, log_prob)
    return TOP_K + bytes([2, 2, 2]) + data


GOOD_ROW = (-1.0, [(4, -0.1), (2, -2.5), (0, -3.0)])


def full_rows(values):
    """A dump of 3 fed rows of 4 logits, 2 of them scored: shape bytes (2, 1, 3)."""
    return FULL + bytes([2, 1, 3]) + struct.pack(f"<{len(values)}f", *values)


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
    "manifest": manifest(),
    "manifest_top_k": manifest(top_k=20),
    "bad_manifest_format": manifest(format="strata-eval-suite"),
    "bad_manifest_vocab": manifest(n_vocab=999),
    "bad_manifest_top_k_float": manifest(top_k=1e300),
    "bad_manifest_window_missing": manifest(windows=[
        {"id": "code-000", "tokens_fnv1a64": "0123456789abcdef", "scored": 16}]),
    "bad_manifest_window_tokens": manifest(windows=[
        {"id": "code-000", "tokens_fnv1a64": "0000000000000000", "scored": 16},
        {"id": "code-001", "tokens_fnv1a64": "fedcba9876543210", "scored": 16}]),
    "top_k_rows": top_k_rows([GOOD_ROW, (-0.5, [(1, -0.5), (3, -1.0), (4, -1.0)])]),
    "bad_top_k_next_nan": top_k_rows([GOOD_ROW, (math.nan, GOOD_ROW[1])]),
    "bad_top_k_unsorted": top_k_rows([GOOD_ROW, (-1.0, [(4, -2.5), (2, -0.1), (0, -3.0)])]),
    "bad_top_k_token_twice": top_k_rows([GOOD_ROW, (-1.0, [(4, -0.1), (2, -2.5), (4, -3.0)])]),
    "bad_top_k_id_past_vocab": top_k_rows([GOOD_ROW, (-1.0, [(5, -0.1), (2, -2.5), (0, -3.0)])]),
    "bad_top_k_short": top_k_rows([GOOD_ROW])[:-4],
    "full_rows": full_rows([float(i) / 4 for i in range(12)]),
    "full_rows_scored_only": FULL + bytes([2, 1, 3]) + struct.pack("<8f", *range(8)),
    "bad_full_rows_inf": full_rows([0.0] * 6 + [math.inf] + [0.0] * 5),
    "bad_full_rows_size": full_rows([0.0] * 10),
    # No scored rows: an empty buffer, which once reached memcpy as a null pointer (UBSan).
    "full_rows_none_scored": FULL + bytes([0, 0, 0]),
}

if __name__ == "__main__":
    write_seeds("eval_files", SEEDS)

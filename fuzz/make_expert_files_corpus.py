#!/usr/bin/env python3
"""Writes the seed corpus for expert_files_fuzz into fuzz/corpus/expert_files/.

Each seed is one selector byte (0: expert trace, 1: warm-start usage file) and a file: valid
traces (versions 1 and 2, with and without predictions) and usage files of the fuzz target's
2 x 4 shape, and near-valid ones broken in one way each. Written with struct and json,
independently of Strata's writers; layouts as in src/experts/lab/expert_trace.h and
src/runtime/expert_usage.h. Usage: fuzz/make_expert_files_corpus.py (overwrites the seeds).
"""
import json
import struct

from seed_corpus import write_seeds

TRACE, USAGE = b"\x00", b"\x01"


def trace(version=2, flags=2, n_layer=3, n_expert=6, k=2, n_tokens=4, n_prompt=2, note=b"seed",
          experts=None, predictions=None):
    listed = min(n_tokens, 4)  # the ids of at most 4 tokens follow, whatever the header says
    if experts is None:
        experts = [(t + l + i * 3) % n_expert for t in range(listed) for l in range(n_layer)
                   for i in range(k)]
    if predictions is None:
        predictions = ([(t + l + 1 + i * 3) % n_expert for t in range(listed)
                        for l in range(1, n_layer) for i in range(k)] if flags & 2 else [])
    head = b"STRTRACE" + struct.pack("<IIIIIIQQ", version, flags, n_layer, n_expert, k, len(note),
                                     n_tokens, n_prompt)
    ids = experts + predictions
    return TRACE + head + note + struct.pack(f"<{len(ids)}H", *ids)


def usage(**fields):
    doc = {"format": "strata-expert-usage", "version": 1, "n_layer": 2, "n_expert": 4,
           "counts": [[5, 0, 2, 1], [0, 0, 7, 3]]}
    doc.update(fields)
    return USAGE + json.dumps({k: v for k, v in doc.items() if v is not None}).encode()


SEEDS = {
    "trace_v2_predictions": trace(),
    "trace_v2_teacher_forced": trace(flags=1),
    "trace_v1": trace(version=1, flags=1),
    "bad_trace_expert_out_of_range": trace(experts=[6] + [1] * 23),
    "bad_trace_expert_twice": trace(experts=[1, 1] + [2, 3] * 11),
    "bad_trace_truncated": trace()[:-3],
    "bad_trace_huge_token_count": trace(n_tokens=1 << 62),
    "bad_trace_prompt_longer": trace(n_prompt=5),
    "bad_trace_unknown_flag": trace(flags=4),
    "bad_trace_v1_predictions": trace(version=1, flags=2),
    "usage": usage(),
    "bad_usage_other_shape": usage(n_layer=3),
    "bad_usage_layer_count_string": usage(n_layer="2"),
    "bad_usage_format_number": usage(format=5),
    "bad_usage_no_counts": usage(counts=None),
    "bad_usage_counts_object": usage(counts={"0": [1, 2, 3, 4]}),
    "bad_usage_negative_count": usage(counts=[[5, -1, 2, 1], [0, 0, 7, 3]]),
    "bad_usage_fraction": usage(counts=[[5, 0.5, 2, 1], [0, 0, 7, 3]]),
    "bad_usage_short_row": usage(counts=[[5, 0, 2], [0, 0, 7, 3]]),
    "bad_usage_not_json": USAGE + b'{"format": "strata-expert-usage", "n_layer": ',
    "bad_usage_array": USAGE + b"[1, 2]",
}


if __name__ == "__main__":
    write_seeds("expert_files", SEEDS)

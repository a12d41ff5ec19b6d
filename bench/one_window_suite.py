#!/usr/bin/env python3
"""Prints an evaluation suite of one window: the first 1024 tokens of one document (its first
token the prompt, the other 1023 scored), so `strata eval run` decodes the document token by
token, as the cache studies replay it.

    one_window_suite.py EVAL_DIR MODEL DOMAIN DOCUMENT_ID > suite.json
"""
import json
import sys

eval_dir, model, domain, document = sys.argv[1:]
window = {"id": domain + "-000", "domain": domain, "document": document,
          "source": domain + ".jsonl", "source_sha256": "", "start": 0, "prompt": 1,
          "scored": 1023, "tokens_fnv1a64": ""}
print(json.dumps({"format": "strata-eval-suite", "version": 1, "eval_dir": eval_dir,
                  "tokenizer": {"path": model, "n_tokens": 16384}, "seed": 0,
                  "windows_per_domain": 1, "prompt": 1, "scored": 1023, "windows": [window]}))

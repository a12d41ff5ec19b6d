#!/bin/bash
# arena.sh: the real arena at 25 %, read-ahead off, on the six held-out documents: successor vs predicted
s=/work/main/build/strata; m=/work/main/models/strata-tiny-moe-q4_0.gguf
for doc in chat:3_00126 code:c-clang.c-0 en_prose:botchan-11 ja:manja-g77.1.gz json:live_multiple_220-94-2 math:gsm8k-13; do
  domain=${doc%%:*}
  /usr/bin/python3 - /work/shared/eval $m $domain ${doc#*:} > suite-$domain.json <<'PY'
import json, sys
eval_dir, model, domain, document = sys.argv[1:]
window = {"id": domain + "-000", "domain": domain, "document": document, "source": domain + ".jsonl", "source_sha256": "", "start": 0, "prompt": 1, "scored": 1023, "tokens_fnv1a64": ""}
print(json.dumps({"format": "strata-eval-suite", "version": 1, "eval_dir": eval_dir, "tokenizer": {"path": model, "n_tokens": 16384}, "seed": 0, "windows_per_domain": 1, "prompt": 1, "scored": 1023, "windows": [window]}))
PY
  $s eval run --suite suite-$domain.json -m $m --arena 25% --readahead 0 -o ar-succ-$domain.json > /dev/null 2>err-s-$domain.txt || tail -2 err-s-$domain.txt
  $s eval run --suite suite-$domain.json -m $m --arena 25% --readahead 0 --predictor tiny.pred -o ar-pred-$domain.json > /dev/null 2>err-p-$domain.txt || tail -2 err-p-$domain.txt
done

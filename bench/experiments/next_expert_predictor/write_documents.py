"""The study's documents from ../shared/eval: docs/test-*.txt, the six held-out documents of
bench/cache_lab.sh, and docs/train-*.txt, ten other documents per domain (cache_lab's tuning
documents left out)."""
import json, subprocess, os
held = {"chat":"3_00126","code":"c-clang.c-0","en_prose":"botchan-11","ja":"manja-g77.1.gz","json":"live_multiple_220-94-2","math":"gsm8k-13"}
tune = {"chat":"2_00079","code":"c-bpf_struct_ops.c-0","en_prose":"botchan-1","ja":"manja-at.1.gz","json":"live_multiple_150-58-4","math":"gsm8k-1"}
os.makedirs("docs", exist_ok=True)
for dom in held:
    docs=[json.loads(l) for l in open(f"/work/shared/eval/{dom}.jsonl")]
    train=[d for d in docs if d["id"] not in (held[dom], tune[dom])][:10]
    for kind, sel in (("test",[d for d in docs if d["id"]==held[dom]]),("train",train)):
        for i,d in enumerate(sel):
            name=f"docs/{kind}-{dom}-{i}"
            open(name+".txt","w").write(d["text"]+"\n")

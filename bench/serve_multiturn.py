#!/usr/bin/env python3
"""A multi-turn conversation replayed through `strata serve`, warm against cold.

  bench/serve_multiturn.py --binary build/strata --model MODEL --out results.json
      [--conversations 3] [--turns 5] [--max-tokens 32] [--text ../shared/eval/chat.jsonl]
      -- [strata serve flags, e.g. --mem 4.3G]

Conversations come from the evaluation text's chat domain (ChatML documents with five or more
user turns); turn i sends the conversation up to its i-th user message, the earlier replies
being the document's own, as a chat client re-sends it. Warm: one server takes turns 1..N in
order, so each turn finds the previous one's KV cache and experts. Cold: a fresh server for each
turn, sent the same prompt. Per turn: prompt tokens, tokens reused from the cache, the arena's
hit rate over the request (prefill and decode) and over its decode steps, latency and expert
bytes read. Writes every measurement, with provenance, as JSON; prints medians over the
conversations.
"""
import json
import pathlib
import re
import statistics
import subprocess
import sys
import time

from strata_server import Server, bench_arguments

ROOT = pathlib.Path(__file__).resolve().parent.parent


def parse_args(argv):
    parser = bench_arguments(__doc__.split("\n\n")[0])
    parser.add_argument("--conversations", type=int, default=3)
    parser.add_argument("--turns", type=int, default=5)
    parser.add_argument("--max-tokens", type=int, default=32)
    parser.add_argument("--text", default=str(ROOT.parent / "shared/eval/chat.jsonl"))
    return parser.parse(argv)


def conversations(path, turns, count):
    """Per conversation, the messages each of its first `turns` user turns sends."""
    out = []
    for line in pathlib.Path(path).read_text().splitlines():
        if not line.strip():
            continue
        text = json.loads(line)["text"]
        messages = [{"role": role, "content": content.strip()} for role, content in
                    re.findall(r"<\|im_start\|>(\w+)\n([\s\S]*?)(?:<\|im_end\|>|$)", text)]
        prefixes = [messages[:i + 1] for i, m in enumerate(messages) if m["role"] == "user"]
        if len(prefixes) >= turns:
            out.append(prefixes[:turns])
    return out[:count]


def rate(before, after, served, claims):
    n = after.get(claims, 0) - before.get(claims, 0)
    return (after.get(served, 0) - before.get(served, 0)) / n if n > 0 else None


def send(server, messages, max_tokens):
    before = server.metrics()
    reply, seconds = server.chat(messages, max_tokens)
    after = server.metrics()
    claims = lambda m: sum(m.get(f"strata_expert_{name}_total", 0) for name in
                           ("hits", "readahead_hits", "late_readaheads", "misses"))
    served = lambda m: sum(m.get(f"strata_expert_{name}_total", 0) for name in
                           ("hits", "readahead_hits"))
    n = claims(after) - claims(before)
    usage = reply["usage"]
    return {"prompt_tokens": usage["prompt_tokens"],
            "reused_tokens": usage["prompt_tokens_details"]["cached_tokens"],
            "completion_tokens": usage["completion_tokens"], "seconds": seconds,
            "hit_rate": (served(after) - served(before)) / n if n > 0 else None,
            "decode_hit_rate": rate(before, after, "strata_decode_expert_served_total",
                                    "strata_decode_expert_claims_total"),
            "mb_read": (after.get("strata_expert_bytes_read_total", 0) -
                        before.get("strata_expert_bytes_read_total", 0)) / 1e6}


def median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def main():
    args = parse_args(sys.argv[1:])
    chats = conversations(args.text, args.turns, args.conversations)
    results = []
    for c, turns in enumerate(chats):
        print(f"conversation {c + 1}/{len(chats)}: warm", file=sys.stderr)
        warm = Server(args.binary, args.model, 1, args.serve)
        try:
            for t, messages in enumerate(turns):
                results.append({"conversation": c, "turn": t + 1, "mode": "warm",
                                **send(warm, messages, args.max_tokens)})
        finally:
            warm.stop()
        for t, messages in enumerate(turns):
            print(f"conversation {c + 1}/{len(chats)}: cold turn {t + 1}", file=sys.stderr)
            cold = Server(args.binary, args.model, 1, args.serve)
            try:
                results.append({"conversation": c, "turn": t + 1, "mode": "cold",
                                **send(cold, messages, args.max_tokens)})
            finally:
                cold.stop()
    keys = ["prompt_tokens", "reused_tokens", "hit_rate", "decode_hit_rate", "seconds", "mb_read"]
    summary = [{"turn": turn, "mode": mode,
                **{k: median(r[k] for r in results if r["turn"] == turn and r["mode"] == mode)
                   for k in keys}}
               for turn in range(1, args.turns + 1) for mode in ("warm", "cold")]
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True,
                            text=True).stdout.strip()
    version = subprocess.run([args.binary, "--version"], capture_output=True, text=True).stdout
    pathlib.Path(args.out).write_text(json.dumps(
        {"provenance": {"date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                        "command": " ".join(sys.argv), "commit": commit,
                        "strata": version.strip()},
         "summary": summary, "results": results}, indent=2) + "\n")
    print("turn  mode  prompt tokens  reused  hit rate  decode hit rate  seconds  MB read")
    percent = lambda v: "      –" if v is None else f"{100 * v:6.1f} %"
    for s in summary:
        print(f"{s['turn']:4}  {s['mode']}  {s['prompt_tokens']:13.0f}  {s['reused_tokens']:6.0f}"
              f"  {percent(s['hit_rate'])}  {percent(s['decode_hit_rate']):>15}"
              f"  {s['seconds']:7.2f}  {s['mb_read']:7.0f}")


if __name__ == "__main__":
    main()

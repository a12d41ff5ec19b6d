#!/usr/bin/env python3
"""A bounded load test of `strata serve` on loopback.

  bench/serve_load.py --binary build/strata --model MODEL --out results.json
      [--parallel 1,4] [--clients 8] [--requests 25] [--max-tokens 16,48,96] [--rounds 3]
      [--text ../shared/eval/en_prose.jsonl] -- [strata serve flags...]

CLIENTS concurrent clients each send REQUESTS streamed chat requests one after another (prompts
from the evaluation text, reply lengths cycling through MAX_TOKENS) to a server this script
starts for each --parallel value in each of ROUNDS rounds. Per run: failed requests, latency
p50/p99, time to first token, aggregate generated tok/s (all clients together over the run's
wall time), and from /metrics the server's decode rate, the expert bytes read per generated
token and the experts computed per decoded token (fewer when sequences decoded together share
experts; 0 where the expert store counts no claims: every expert resident on the CPU). Prints
medians over the rounds and writes every run, with provenance, as JSON. Python's standard
library only: it runs on the GPU machine too.
"""
import json
import os
import pathlib
import platform
import re
import statistics
import subprocess
import sys
import threading
import time

from strata_server import Server, bench_arguments

ROOT = pathlib.Path(__file__).resolve().parent.parent


def parse_args(argv):
    parser = bench_arguments(__doc__.split("\n\n")[0])
    parser.add_argument("--parallel", default="1,4")
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--requests", type=int, default=25)
    parser.add_argument("--max-tokens", default="16,48,96")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--text", default=str(ROOT.parent / "shared/eval/en_prose.jsonl"))
    return parser.parse(argv)


def prompts(path):
    """The first sentences of each document of the evaluation text."""
    out = []
    for line in pathlib.Path(path).read_text().splitlines():
        if line.strip():
            text = re.sub(r"<\|im_(start|end)\|>[a-z]*\n?", " ", json.loads(line)["text"])
            out.append(text[:300].strip())
    return out


def quantile(values, q):
    values = sorted(v for v in values if v is not None)
    return values[min(len(values) - 1, int(q * len(values)))] if values else None


def run(args, parallel, texts):
    server = Server(args.binary, args.model, parallel, args.serve)
    try:
        lengths = [int(n) for n in args.max_tokens.split(",")]
        server.request(texts[0], 4)  # the first request's one-time costs
        before = server.metrics()
        results = [None] * (args.clients * args.requests)

        def client(c):
            for r in range(args.requests):
                i = c * args.requests + r
                results[i] = server.request(texts[i % len(texts)], lengths[i % len(lengths)])

        start = time.perf_counter()
        threads = [threading.Thread(target=client, args=(c,)) for c in range(args.clients)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        wall = time.perf_counter() - start
        after = server.metrics()
    finally:
        server.stop()
    ok = [r for r in results if r["ok"]]
    delta = lambda name: after.get(name, 0) - before.get(name, 0)
    generated, decoded = delta("strata_generated_tokens_total"), delta("strata_decode_tokens_total")
    return {"parallel": parallel, "requests": len(results), "failed": len(results) - len(ok),
            "wall_seconds": wall,
            "latency_p50_s": quantile([r["seconds"] for r in ok], 0.5),
            "latency_p99_s": quantile([r["seconds"] for r in ok], 0.99),
            "first_token_p50_s": quantile([r["first_token_seconds"] for r in ok], 0.5),
            "generated_tokens": generated,
            "aggregate_tokens_per_s": generated / wall,
            "decode_tokens_per_s": decoded / delta("strata_decode_seconds_total"),
            "expert_bytes_read_per_token": delta("strata_expert_bytes_read_total") / generated,
            "expert_claims_per_decoded_token":
                delta("strata_decode_expert_claims_total") / decoded}


def provenance(args):
    def git(*command):
        try:
            return subprocess.run(["git", *command], cwd=ROOT, capture_output=True, text=True,
                                  check=True).stdout.strip()
        except (OSError, subprocess.CalledProcessError):
            return None
    version = subprocess.run([args.binary, "--version"], capture_output=True, text=True).stdout
    return {"date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "command": " ".join(sys.argv), "commit": git("rev-parse", "HEAD"),
            "dirty": bool(git("status", "--porcelain")), "strata": version.strip(),
            "host": {"cpu": platform.processor() or platform.machine(),
                     "cores": os.cpu_count()}}


def main():
    args = parse_args(sys.argv[1:])
    texts = prompts(args.text)
    parallels = [int(p) for p in args.parallel.split(",")]
    runs = []
    for round_index in range(1, args.rounds + 1):
        for parallel in parallels:
            print(f"round {round_index}/{args.rounds}: --parallel {parallel}", file=sys.stderr)
            runs.append({"round": round_index, **run(args, parallel, texts)})
    keys = ["latency_p50_s", "latency_p99_s", "first_token_p50_s", "aggregate_tokens_per_s",
            "decode_tokens_per_s", "expert_bytes_read_per_token",
            "expert_claims_per_decoded_token"]
    summary = []
    for parallel in parallels:
        mine = [r for r in runs if r["parallel"] == parallel]
        summary.append({"parallel": parallel, "failed": sum(r["failed"] for r in mine),
                        **{k: statistics.median(r[k] for r in mine) for k in keys}})
    pathlib.Path(args.out).write_text(json.dumps(
        {"provenance": provenance(args), "clients": args.clients,
         "requests_per_client": args.requests, "summary": summary, "runs": runs}, indent=2) + "\n")
    print("parallel  failed  p50 s  p99 s  ttft p50 s  aggregate tok/s  decode tok/s"
          "  MB read/token  experts/token")
    for s in summary:
        print(f"{s['parallel']:8}  {s['failed']:6}  {s['latency_p50_s']:5.2f}  "
              f"{s['latency_p99_s']:5.2f}  {s['first_token_p50_s']:10.3f}  "
              f"{s['aggregate_tokens_per_s']:15.1f}  {s['decode_tokens_per_s']:12.1f}  "
              f"{s['expert_bytes_read_per_token'] / 1e6:13.2f}  "
              f"{s['expert_claims_per_decoded_token']:13.1f}")


if __name__ == "__main__":
    main()

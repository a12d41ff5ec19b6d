"""`strata serve` for the bench scripts: started on a free loopback port, its /metrics read, chat
requests sent whole or streamed. Python's standard library only."""
import argparse
import http.client
import json
import re
import subprocess
import threading
import time
import urllib.request


def bench_arguments(description):
    """A parser with the flags every serve bench takes (--binary, --model, --out); its
    parse(argv) splits off what follows "--" as the server's own flags (args.serve)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--binary", default="build/strata")
    parser.add_argument("--model", required=True)
    parser.add_argument("--out", required=True)

    def parse(argv):
        split = argv.index("--") if "--" in argv else len(argv)
        args = parser.parse_args(argv[:split])
        args.serve = argv[split + 1:]
        return args

    parser.parse = parse
    return parser


class Server:
    """`strata serve` on a free loopback port, until stop()."""

    def __init__(self, binary, model, parallel, serve_args):
        command = [binary, "serve", "-m", model, "--port", "0", "--parallel", str(parallel),
                   "--queue", "64", *serve_args]
        self.process = subprocess.Popen(command, stdout=subprocess.DEVNULL,
                                        stderr=subprocess.PIPE, text=True)
        self.stderr = ""
        for line in self.process.stderr:
            self.stderr += line
            match = re.search(r"listening on http://([^: ]+):(\d+)", line)
            if match:
                self.host, self.port = match.group(1), int(match.group(2))
                threading.Thread(target=self.process.stderr.read, daemon=True).start()
                return
        raise RuntimeError(f"strata serve exited ({self.process.wait()}):\n{self.stderr}")

    def stop(self):
        self.process.terminate()
        self.process.wait()  # gone before the next server maps the model

    def metrics(self):
        """Every metric without labels, by name."""
        with urllib.request.urlopen(f"http://{self.host}:{self.port}/metrics") as response:
            text = response.read().decode()
        return {name: float(value) for name, value in
                (line.rsplit(" ", 1) for line in text.splitlines()
                 if line and not line.startswith("#") and "{" not in line)}

    def _post(self, body):
        """An open connection and the response to a chat request of `body`."""
        connection = http.client.HTTPConnection(self.host, self.port, timeout=600)
        connection.request("POST", "/v1/chat/completions", json.dumps(body),
                           {"Content-Type": "application/json"})
        return connection, connection.getresponse()

    def request(self, prompt, max_tokens):
        """One streamed request: its latency, time to first token and tokens generated."""
        body = {"messages": [{"role": "user", "content": prompt}], "max_tokens": max_tokens,
                "temperature": 0.7, "seed": 1, "stream": True,
                "stream_options": {"include_usage": True}}
        start = time.perf_counter()
        connection = None
        try:
            connection, response = self._post(body)
            if response.status != 200:
                return {"ok": False, "status": response.status}
            first, usage = None, None
            for raw in response:
                line = raw.decode().strip()
                if not line.startswith("data: ") or line == "data: [DONE]":
                    continue
                event = json.loads(line[6:])
                if "error" in event:
                    return {"ok": False, "status": 500}
                usage = event.get("usage") or usage
                choices = event.get("choices") or [{}]
                if first is None and choices[0].get("delta", {}).get("content"):
                    first = time.perf_counter()
        except OSError as error:
            return {"ok": False, "status": str(error)}
        finally:
            if connection:
                connection.close()
        return {"ok": usage is not None, "seconds": time.perf_counter() - start,
                "first_token_seconds": None if first is None else first - start,
                "completion_tokens": usage["completion_tokens"] if usage else 0}

    def chat(self, messages, max_tokens):
        """One whole (not streamed) greedy chat request: its JSON reply and seconds."""
        start = time.perf_counter()
        connection, response = self._post(
            {"messages": messages, "max_tokens": max_tokens, "temperature": 0})
        try:
            reply = json.loads(response.read())
        finally:
            connection.close()
        if response.status != 200:
            raise RuntimeError(json.dumps(reply))
        return reply, time.perf_counter() - start

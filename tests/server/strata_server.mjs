// Starts `strata serve` on a free loopback port for a test and stops it afterwards.
import { spawn } from "node:child_process";

export const binary = process.env.STRATA_BINARY;
export const model = process.env.STRATA_MODEL;

// Resolves once the server says where it listens: { url, process, stderr(), stop() }.
export function startServer(extraArgs = []) {
  const args = ["serve", "-m", model, "--port", "0", "-t", "2", "--ctx", "512", ...extraArgs];
  const child = spawn(binary, args, { stdio: ["ignore", "ignore", "pipe"] });
  let stderr = "";
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error("no 'listening on' line:\n" + stderr)), 60000);
    child.stderr.on("data", (data) => {
      stderr += data;
      const match = /listening on (http:\/\/[^ ]+)/.exec(stderr);
      if (match && timer) {
        clearTimeout(timer);
        resolve({
          url: match[1],
          process: child,
          stderr: () => stderr,
          stop: () => new Promise((done) => {
            child.once("exit", (code, signal) => done({ code, signal }));
            child.kill("SIGTERM");
          }),
        });
      }
    });
    child.once("exit", (code) => reject(new Error(`strata serve exited (${code}):\n${stderr}`)));
  });
}

// The value of a metric without labels in the Prometheus text.
export function metric(text, name) {
  const line = text.split("\n").find((l) => l.startsWith(name + " "));
  return line === undefined ? undefined : Number(line.slice(name.length + 1));
}

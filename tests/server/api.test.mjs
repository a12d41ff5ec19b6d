// `strata serve` driven by OpenAI's own client (the npm package `openai`), as editors and agents
// drive it: models, chat (whole and streamed), completions, a conversation's cached prefix,
// stop sequences, cancellation by disconnecting, a full queue, and every class of bad request.
import assert from "node:assert/strict";
import net from "node:net";
import { after, before, describe, test } from "node:test";
import OpenAI from "openai";
import { metric, startServer } from "./strata_server.mjs";

const key = "test-key";
let server, client;

before(async () => {
  server = await startServer(["--arena", "25%", "--parallel", "2", "--api-key", key]);
  client = new OpenAI({ baseURL: server.url + "/v1", apiKey: key, maxRetries: 0 });
});
after(async () => {
  const { code } = await server.stop();
  assert.equal(code, 0, server.stderr());
});

const question = [{ role: "user", content: "Write a Python function that adds two numbers." }];

describe("the OpenAI API", () => {
  test("lists the model", async () => {
    const models = await client.models.list();
    assert.equal(models.data.length, 1);
    assert.equal(models.data[0].id, "strata-tiny-moe-q4_0");
  });

  test("a greedy chat reply is the same whole and streamed", async () => {
    const whole = await client.chat.completions.create({
      model: "strata-tiny-moe-q4_0", messages: question, max_tokens: 24, temperature: 0,
    });
    const text = whole.choices[0].message.content;
    assert.ok(text.length > 0);
    assert.equal(whole.choices[0].message.role, "assistant");
    assert.ok(["stop", "length"].includes(whole.choices[0].finish_reason));
    assert.ok(whole.usage.completion_tokens >= 1 && whole.usage.completion_tokens <= 24);
    const stream = await client.chat.completions.create({
      model: "strata-tiny-moe-q4_0", messages: question, max_tokens: 24, temperature: 0,
      stream: true, stream_options: { include_usage: true },
    });
    let streamed = "", chunks = 0, usage, finish;
    for await (const chunk of stream) {
      if (chunk.usage) usage = chunk.usage;
      for (const choice of chunk.choices) {
        streamed += choice.delta.content ?? "";
        finish = choice.finish_reason ?? finish;
      }
      ++chunks;
    }
    assert.equal(streamed, text);
    assert.ok(chunks > 3, "the reply came in pieces");
    assert.equal(finish, whole.choices[0].finish_reason);
    assert.deepEqual(usage.completion_tokens, whole.usage.completion_tokens);
    // The same prompt again: its tokens, all but the last, came from the cached conversation.
    assert.equal(usage.prompt_tokens_details.cached_tokens, usage.prompt_tokens - 1);
  });

  test("the next turn of a conversation reuses its cached prefix", async () => {
    const first = await client.chat.completions.create({
      messages: [{ role: "user", content: "Name a colour." }], max_tokens: 8, temperature: 0,
    });
    const second = await client.chat.completions.create({
      messages: [{ role: "user", content: "Name a colour." },
                 { role: "assistant", content: first.choices[0].message.content },
                 { role: "user", content: "And another one?" }],
      max_tokens: 8, temperature: 0,
    });
    assert.ok(second.usage.prompt_tokens_details.cached_tokens >= first.usage.prompt_tokens,
              JSON.stringify(second.usage));
    const metrics = await (await fetch(server.url + "/metrics",
                                       { headers: { Authorization: "Bearer " + key } })).text();
    assert.ok(metric(metrics, "strata_prompt_tokens_reused_total") > 0, metrics);
    assert.ok(metric(metrics, "strata_generated_tokens_total") > 0);
  });

  test("a text completion, and a stop sequence ends it before the sequence", async () => {
    const options = { model: "m", prompt: "def fibonacci(n):", max_tokens: 20, temperature: 0 };
    const whole = await client.completions.create(options);
    const text = whole.choices[0].text;
    assert.ok(text.length > 4, text);
    const stop = text.slice(3, 5);
    const stopped = await client.completions.create({ ...options, stop: [stop] });
    assert.equal(stopped.choices[0].text, text.slice(0, text.indexOf(stop)));
    assert.equal(stopped.choices[0].finish_reason, "stop");
  });

  test("a client that disconnects cancels its generation", { timeout: 60000 }, async () => {
    // Greedy, this question's reply is far longer than the few tokens decoded before the
    // abort arrives, so the generation cannot end on its own first.
    const abort = new AbortController();
    const response = await fetch(server.url + "/v1/chat/completions", {
      method: "POST", signal: abort.signal,
      headers: { "Content-Type": "application/json", Authorization: "Bearer " + key },
      body: JSON.stringify({ messages: question, max_tokens: 400, temperature: 0, stream: true }),
    });
    const reader = response.body.getReader();
    await reader.read();  // the first event: the generation has started
    abort.abort();
    await reader.read().catch(() => {});
    let cancelled = 0;
    for (let i = 0; i < 100 && cancelled < 1; ++i) {
      await new Promise((r) => setTimeout(r, 100));
      const text = await (await fetch(server.url + "/metrics",
                                      { headers: { Authorization: "Bearer " + key } })).text();
      cancelled = metric(text, "strata_cancelled_requests_total");
    }
    assert.ok(cancelled >= 1);
  });
});

describe("bad requests get a 4xx and one clear message", () => {
  const post = (path, body, headers = {}) => fetch(server.url + path, {
    method: "POST", body,
    headers: { "Content-Type": "application/json", Authorization: "Bearer " + key, ...headers },
  });

  test("a wrong or missing key is 401", async () => {
    const stranger = new OpenAI({ baseURL: server.url + "/v1", apiKey: "wrong", maxRetries: 0 });
    await assert.rejects(stranger.models.list(), (e) => e.status === 401 &&
                         /API key/.test(e.message));
    const bare = await fetch(server.url + "/v1/models");
    assert.equal(bare.status, 401);
    assert.equal((await fetch(server.url + "/health")).status, 200);
  });

  test("fields of the wrong type or out of range are 400 naming the field", async () => {
    await assert.rejects(
      client.chat.completions.create({ messages: question, max_tokens: 0 }),
      (e) => e.status === 400 && /'max_tokens' must be from 1/.test(e.message));
    await assert.rejects(
      client.chat.completions.create({ messages: [{ role: "robot", content: "x" }] }),
      (e) => e.status === 400 && /role must be/.test(e.message));
    await assert.rejects(client.chat.completions.create({ messages: question, n: 3 }),
                         (e) => e.status === 400 && /'n' must be 1/.test(e.message));
  });

  test("malformed bodies, unknown paths, oversized bodies and prompts", async () => {
    const cases = [
      [await post("/v1/chat/completions", "{not json"), 400, /not valid JSON/],
      [await post("/v1/chat/completions", "[]"), 400, /JSON object/],
      [await post("/v1/completions", '{"prompt": 5}'), 400, /'prompt' must be/],
      [await post("/v1/nothing", "{}"), 404, /no endpoint POST \/v1\/nothing/],
      [await post("/v1/chat/completions", " ".repeat(5 << 20)), 413, /larger than/],
      [await post("/v1/completions", JSON.stringify({ prompt: "word ".repeat(2000) })), 400,
       /the context holds 512/],
    ];
    for (const [response, status, message] of cases) {
      assert.equal(response.status, status);
      const body = await response.json();
      assert.match(body.error.message, message);
      assert.equal(typeof body.error.type, "string");
    }
  });
});

describe("hostile bytes on the socket", () => {
  // Sends `bytes` on a fresh connection and resolves with what came back (or "" on a reset).
  const raw = (bytes) => new Promise((resolve) => {
    const socket = net.connect(Number(new URL(server.url).port), "127.0.0.1");
    let reply = "";
    socket.on("data", (d) => { reply += d; });
    socket.on("error", () => resolve(reply));
    socket.on("close", () => resolve(reply));
    socket.setTimeout(2000, () => socket.destroy());
    socket.end(bytes);
  });

  test("malformed HTTP, random bytes and cut requests leave the server serving", async () => {
    let seed = 7;
    const random = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
    const body = JSON.stringify({ messages: question, max_tokens: 2 });
    const inputs = [
      "GARBAGE\r\n\r\n", "GET\r\n\r\n", "POST /v1/chat/completions HTTP/1.1\r\n\r\n",
      `POST /v1/chat/completions HTTP/1.1\r\nContent-Length: 999999999\r\n\r\n{`,
      `POST /v1/chat/completions HTTP/1.1\r\nContent-Length: ${body.length}\r\n\r\n` +
        body.slice(0, 10),
      `GET /v1/models HTTP/1.1\r\n${"X: y\r\n".repeat(5000)}\r\n`,
      `GET /${"a".repeat(100000)} HTTP/1.1\r\n\r\n`,
      "POST /v1/completions HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
    ];
    for (let i = 0; i < 40; ++i)
      inputs.push(Buffer.from(Array.from({ length: 1 + Math.floor(random() * 2000) },
                                         () => Math.floor(random() * 256))));
    for (const input of inputs) await raw(input);
    assert.equal((await fetch(server.url + "/health")).status, 200);
    const reply = await client.chat.completions.create({ messages: question, max_tokens: 2 });
    assert.equal(reply.choices.length, 1);
  });
});

describe("a full queue", () => {
  test("is 503 with Retry-After while one request runs", async () => {
    const busy = await startServer(["--parallel", "1", "--queue", "0"]);
    try {
      const busyClient = new OpenAI({ baseURL: busy.url + "/v1", apiKey: "x", maxRetries: 0 });
      const long = await busyClient.chat.completions.create(
        { messages: question, max_tokens: 300, stream: true, temperature: 0 });
      const iterator = long[Symbol.asyncIterator]();
      await iterator.next();  // the first generation has started
      const refused = await fetch(busy.url + "/v1/chat/completions", {
        method: "POST", headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ messages: question, max_tokens: 4 }),
      });
      assert.equal(refused.status, 503);
      assert.equal(refused.headers.get("retry-after"), "1");
      assert.match((await refused.json()).error.message, /busy/);
      for (let next = await iterator.next(); !next.done; next = await iterator.next());
    } finally {
      await busy.stop();
    }
  });
});

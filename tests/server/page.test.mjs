// The page `strata serve` shows at /, in headless Chromium: a message typed into the chat box
// streams a reply, and the arena view (residency heat map, hit rate, tok/s) updates as the
// experts stream. STRATA_SCREENSHOT names a PNG to save of the page after the reply.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { chromium } from "playwright-core";
import { startServer } from "./strata_server.mjs";

let server, browser;

before(async () => {
  server = await startServer(["--arena", "25%"]);
  browser = await chromium.launch({
    executablePath: process.env.STRATA_CHROMIUM || "/usr/bin/chromium",
    args: ["--no-sandbox"],
  });
});
after(async () => {
  await browser?.close();
  const { code } = await server.stop();
  assert.equal(code, 0, server.stderr());
});

test("a message sent from the page streams a reply and the arena view updates", async () => {
  const page = await browser.newPage({ viewport: { width: 1200, height: 720 } });
  const errors = [];
  page.on("pageerror", (error) => errors.push(String(error)));
  await page.goto(server.url + "/");
  await page.waitForFunction(() => document.getElementById("model").textContent.includes("context"));
  const updatesBefore = Number(await page.locator("#arena").getAttribute("data-updates"));
  await page.fill("#prompt", "Write a short poem about rivers.");
  await page.press("#prompt", "Enter");
  const reply = page.locator(".message.assistant").last();
  // Streaming: text appears before the reply is done.
  await page.waitForFunction(() => {
    const last = [...document.querySelectorAll(".message.assistant")].pop();
    return last && last.querySelector(".text").textContent.length > 0;
  });
  await page.waitForSelector(".message.assistant[data-state=done]", { timeout: 60000 });
  assert.ok((await reply.locator(".text").textContent()).length > 0);
  // The arena view has redrawn since, with a hit rate and a decode rate from the reply.
  await page.waitForFunction(
    (before) => Number(document.getElementById("arena").dataset.updates) >= before + 2 &&
      document.getElementById("hit-rate").textContent.includes("%") &&
      document.getElementById("tok-s").textContent !== "–",
    updatesBefore, { timeout: 15000 });
  const resident = await page.locator("#resident").textContent();
  assert.match(resident, /^\d+ \/ \d+$/);
  if (process.env.STRATA_SCREENSHOT) await page.screenshot({ path: process.env.STRATA_SCREENSHOT });
  assert.deepEqual(errors, []);
});

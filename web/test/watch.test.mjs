// The spectator page (/watch#m=MATCH) in a real headless Chromium against a
// real matchd: a whole match between two bots watched to its end, through a
// page reload midway. Every frame the page receives is decoded here and
// checked: no card of any hand or draw, no owner-only event, no legal
// intent — the spectator page never receives a hidden card. Any uncaught
// page error fails the test.
import assert from "node:assert/strict";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { after, before, test } from "node:test";

import { decodeServerFrame } from "../../clients/ts/dist/matchgrain-client.js";
import { launchChromium } from "./chromium.mjs";
import { repoRoot, startMatchd } from "./matchd.mjs";

const artifacts = join(repoRoot, "web", "test", "artifacts");
let matchd;
let browser;

before(async () => {
  mkdirSync(artifacts, { recursive: true });
  matchd = await startMatchd(["--bot-think", "40ms", "--max-spectators", "4"]);
  browser = await launchChromium();
});

after(async () => {
  await browser?.close();
  await matchd?.stop();
});

/** hidden names what a spectator's frame shows that it must not, or "". */
function hidden(f) {
  if (f.type === "ServerSnapshot") {
    const v = f.body.view;
    if (v.you !== 2 || v.legalIntents.length || v.players.some((p) => p.hand.length) || v.choice || v.ability || v.order) return "a snapshot with a hand, a choice or legal intents";
  }
  if (f.type === "ServerEvents") {
    for (const e of f.body.events) {
      const ev = e.event;
      if ((ev.type === "CardsDrawn" || ev.type === "ReturnedToDeck") && ev.body.cards.length) return `seq ${e.seq}: ${ev.type} with its cards`;
      if (ev.type === "CardSearchedView" || ev.type === "SearchFailedView") return `seq ${e.seq}: owner-only ${ev.type}`;
      if (ev.type === "Decision" && (ev.body.legalIntents.length || ev.body.choice || ev.body.ability || ev.body.order)) return `seq ${e.seq}: a Decision with legal intents or a choice`;
    }
  }
  return "";
}

/** waitStatus polls the page's status line (the pages' CSP forbids waitForFunction's eval) until ok(text, data-finished). */
async function waitStatus(page, ok, timeoutMs) {
  const deadline = Date.now() + timeoutMs;
  let last = "";
  while (Date.now() < deadline) {
    try {
      const el = await page.$("#status");
      if (el) {
        last = (await el.textContent()) ?? "";
        if (ok(last, await el.getAttribute("data-finished"))) return;
      }
    } catch (e) {
      if (!/context was destroyed|navigation|detached/.test(String(e))) throw e; // a reload in progress
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  assert.fail(`status still ${JSON.stringify(last)} after ${timeoutMs} ms`);
}

test("a spectator watches a whole bot match, through a reload, and never receives a hidden card", async () => {
  const res = await fetch(`http://${matchd.http}/api/matches`, {
    method: "POST",
    headers: { "Content-Type": "application/json", Authorization: `Bearer ${matchd.adminToken}` },
    body: JSON.stringify({ players: [{ name: "Ann", deck: "S1", bot: true }, { name: "Bob", deck: "S2", bot: true }] }),
  });
  assert.equal(res.status, 201, await res.clone().text());
  const { matchId } = await res.json();

  const ctx = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await ctx.newPage();
  const errors = [];
  page.on("pageerror", (e) => errors.push(`${e.name}: ${e.message}`));
  const frames = [];
  const leaks = [];
  page.on("websocket", (ws) =>
    ws.on("framereceived", ({ payload }) => {
      const f = decodeServerFrame(typeof payload === "string" ? Buffer.from(payload, "binary") : new Uint8Array(payload));
      frames.push(f.type);
      const why = hidden(f);
      if (why) leaks.push(why);
    }),
  );
  // The list of live matches offers it; picking it starts watching.
  await page.goto(`http://${matchd.http}/watch`);
  await page.click(`#live a[data-match="${matchId}"]`, { timeout: 30_000 });
  await waitStatus(page, (s) => /Turn \d+/.test(s), 30_000);
  const before = frames.length;
  await page.reload();
  await waitStatus(page, (s, finished) => finished === "true", 120_000);
  await page.screenshot({ path: join(artifacts, "watch-finished.png") });
  const status = await page.textContent("#status");
  assert.match(status, /(wins|Draw)/, `the finished page says ${status}`);
  assert.equal(await page.getAttribute("#replay-link", "href"), `/replay#m=${matchId}`, "the end offers the replay");
  assert.ok(frames.filter((t) => t === "ServerHello").length >= 2, "the reload connected again");
  assert.ok(frames.length > before, "frames after the reload");
  // The board the page kept from events is the board a fresh snapshot gives.
  const kept = { top: await page.innerHTML("#top"), bottom: await page.innerHTML("#bottom") };
  await page.reload();
  await waitStatus(page, (s, finished) => finished === "true", 30_000);
  assert.deepEqual({ top: await page.innerHTML("#top"), bottom: await page.innerHTML("#bottom") }, kept, "the board kept from events differs from the final snapshot's");
  assert.deepEqual(leaks, [], "hidden information on the spectator's wire");
  assert.deepEqual(errors, [], "page errors");
  await ctx.close();
});

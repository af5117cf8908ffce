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

/** waitConn polls the page's connection line until it reads want. */
async function waitConn(page, want, timeoutMs) {
  const deadline = Date.now() + timeoutMs;
  let last = "";
  while (Date.now() < deadline) {
    last = (await page.textContent("#conn").catch(() => "")) ?? "";
    if (last === want) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  assert.fail(`connection line still ${JSON.stringify(last)} after ${timeoutMs} ms`);
}

test("a spectator beyond the match's cap is told so at once, and Try again watches once a place is free", async () => {
  const node = await startMatchd(["--max-spectators", "1"]);
  const ctx = await browser.newContext({ viewport: { width: 390, height: 844 } });
  try {
    // Two seats nobody plays: the match waits, and stays there to watch.
    const res = await fetch(`http://${node.http}/api/matches`, {
      method: "POST",
      headers: { "Content-Type": "application/json", Authorization: `Bearer ${node.adminToken}` },
      body: JSON.stringify({ players: [{ name: "Ann", deck: "S1" }, { name: "Bob", deck: "S2" }] }),
    });
    assert.equal(res.status, 201, await res.clone().text());
    const { matchId } = await res.json();
    const url = `http://${node.http}/watch#m=${matchId}`;
    const errors = [];
    const first = await ctx.newPage();
    const second = await ctx.newPage();
    for (const p of [first, second]) p.on("pageerror", (e) => errors.push(`${e.name}: ${e.message}`));
    let hellos = 0;
    second.on("websocket", (ws) => ws.on("framesent", () => hellos++));
    await first.goto(url);
    await waitConn(first, "open", 30_000);

    // The match allows one spectator: the second page is refused (4429),
    // says so, and does not keep trying.
    await second.goto(url);
    await waitStatus(second, (s) => /as many spectators as it allows/.test(s), 30_000);
    await second.screenshot({ path: join(artifacts, "watch-full-phone.png") });
    assert.equal(hellos, 1, "the refused page sent one hello and stopped");
    assert.ok(await second.isVisible("#retry"), "the refused page offers Try again");

    // Once the first viewer leaves, Try again watches (the match may take
    // a moment to let the first go: the refusal can repeat meanwhile).
    await first.close();
    const deadline = Date.now() + 30_000;
    for (;;) {
      const sent = hellos;
      await second.click("#retry");
      // The reloaded page's hello: what the page says from then on is its answer.
      while (hellos === sent) {
        assert.ok(Date.now() < deadline, "Try again sent no hello");
        await new Promise((r) => setTimeout(r, 50));
      }
      const [status, conn] = await waitWatching(second);
      if (conn === "open") break;
      assert.match(status, /as many spectators as it allows/, "a retry ended otherwise");
      assert.ok(Date.now() < deadline, "no place after the first viewer left");
    }
    assert.deepEqual(errors, [], "page errors");
  } finally {
    await ctx.close();
    await node.stop();
  }
});

/** waitWatching waits until the page either watches or is refused again, and returns its status and connection lines. */
async function waitWatching(page) {
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    const status = (await page.textContent("#status").catch(() => "")) ?? "";
    const conn = (await page.textContent("#conn").catch(() => "")) ?? "";
    if (conn === "open" || /as many spectators as it allows/.test(status)) return [status, conn];
    await new Promise((r) => setTimeout(r, 100));
  }
  assert.fail("the page neither watches nor is refused after 30 s");
}

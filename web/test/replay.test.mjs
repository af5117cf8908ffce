// The replay viewer (/replay#m=MATCH&b=N) in headless Chromium against a real
// single-node matchd on its embedded store, as the demo runs (replays read the
// durable log, which both stores keep): a bot match watched live on /watch to
// its end, then replayed: its last board is the board the spectator page ended
// on; stepping forward and back comes back to the same board; a jump to a turn
// lands on it; playing moves on; and the link of a batch opens that batch in
// another tab with the same board.
import assert from "node:assert/strict";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { after, before, test } from "node:test";

import { launchChromium } from "./chromium.mjs";
import { repoRoot, startMatchd } from "./matchd.mjs";

const artifacts = join(repoRoot, "web", "test", "artifacts");
let matchd;
let browser;

before(async () => {
  mkdirSync(artifacts, { recursive: true });
  matchd = await startMatchd(["--bot-think", "20ms"]);
  browser = await launchChromium();
});

after(async () => {
  await browser?.close();
  await matchd?.stop();
});

/** poll retries read (which may throw while a page reloads) until ok(value) or the time is up. */
async function poll(what, read, ok, timeoutMs = 60_000) {
  const deadline = Date.now() + timeoutMs;
  let last;
  while (Date.now() < deadline) {
    try {
      last = await read();
      if (ok(last)) return last;
    } catch (e) {
      if (!/context was destroyed|navigation|detached/.test(String(e))) throw e;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  assert.fail(`${what}: still ${JSON.stringify(last)} after ${timeoutMs} ms`);
}

/** board is what a page shows of the match: both sides and the status. */
async function board(page) {
  return {
    top: await page.innerHTML("#top"),
    bottom: await page.innerHTML("#bottom"),
    status: await page.textContent("#status"),
  };
}

const at = (page) => page.getAttribute("#position", "data-at").then(Number);

test("a finished match replays as the spectator saw it: back, forward, a turn, play, a link", async () => {
  const admin = { "Content-Type": "application/json", Authorization: `Bearer ${matchd.adminToken}` };
  const res = await fetch(`http://${matchd.http}/api/matches`, {
    method: "POST",
    headers: admin,
    body: JSON.stringify({ players: [{ name: "Ann", deck: "S1", bot: true }, { name: "Bob", deck: "S2", bot: true }] }),
  });
  assert.equal(res.status, 201, await res.clone().text());
  const { matchId } = await res.json();
  const ctx = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const errors = [];
  const tab = async () => {
    const p = await ctx.newPage();
    p.on("pageerror", (e) => errors.push(`${e.name}: ${e.message}`));
    return p;
  };

  const live = await tab();
  await live.goto(`http://${matchd.http}/watch#m=${matchId}`);
  await poll("the live match's end", () => live.getAttribute("#status", "data-finished"), (f) => f === "true", 120_000);
  const ended = await board(live);

  const replay = await tab();
  const before = await fetch(`http://${matchd.http}/api/play/replays/nope`);
  assert.equal(before.status, 404);
  // The spectator page's end offers the replay: follow it.
  await live.click("#replay-link");
  await poll("the replay from the spectator page", () => live.getAttribute("#position", "data-at"), (a) => a === "0");
  await replay.goto(`http://${matchd.http}/replay#m=${matchId}`);
  await poll("the replay's first batch", () => replay.getAttribute("#position", "data-at"), (a) => a === "0");
  await replay.click("#last");
  const last = await at(replay);
  assert.ok(last > 10, `only ${last} batches`);
  assert.deepEqual(await board(replay), ended, "the replay's last board is not the one the spectator page ended on");

  // Every battle line names the players: nobody on this page is "you".
  await replay.click("#first");
  let attacks = 0;
  for (let i = 0; i < last; i++) {
    const line = (await replay.textContent("#battle")) ?? "";
    if (line.includes("attacks")) attacks++;
    assert.doesNotMatch(line, /\byour?\b/i, `batch ${i}'s battle line speaks to a seat`);
    await replay.click("#forward");
  }
  assert.ok(attacks > 0, "no batch showed an attack");

  // Forward and back again: the same board.
  await replay.click("#first");
  for (let i = 0; i < 12; i++) await replay.click("#forward");
  assert.equal(await at(replay), 12);
  const twelve = await board(replay);
  await replay.click("#forward");
  await replay.click("#forward");
  await replay.click("#back");
  await replay.click("#back");
  assert.equal(await at(replay), 12);
  assert.deepEqual(await board(replay), twelve, "back and forward show another board");

  // A jump to turn 3, then play at 8×: it moves on by itself.
  await replay.fill("#turn", "3");
  await replay.press("#turn", "Enter");
  await poll("the jump to turn 3", () => replay.textContent("#status"), (s) => /^Turn 3 /.test(s));
  const from = await at(replay);
  await replay.selectOption("#speed", "8");
  await replay.click("#play");
  await poll("playing", () => at(replay), (a) => a >= from + 3);
  await replay.click("#play");

  // The link of batch 12 opens batch 12 with the same board.
  const shared = await tab();
  await shared.goto(`http://${matchd.http}/replay#m=${matchId}&b=12`);
  await poll("the shared link's batch", () => shared.getAttribute("#position", "data-at"), (a) => a === "12");
  assert.deepEqual(await board(shared), twelve, "the shared link shows another board");
  await replay.screenshot({ path: join(artifacts, "replay.png") });
  assert.deepEqual(errors, [], "page errors");
  await ctx.close();
});

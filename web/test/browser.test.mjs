// The web client and the ops console in a real headless Chromium (Debian's
// /usr/bin/chromium, or $CHROMIUM), against a real matchd: a whole match
// against the server's bot played by clicking, a reconnect after the page's
// connection is cut mid-decision, and the console showing the match. The
// board's screenshot is kept in web/test/artifacts/.
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { chromium } from "playwright-core";

import { repoRoot, startMatchd, startProxy } from "./matchd.mjs";

const artifacts = join(repoRoot, "web", "test", "artifacts");
let matchd;
let ctx;
let profile;

before(async () => {
  mkdirSync(artifacts, { recursive: true });
  matchd = await startMatchd(["--bot-think", "30ms"]);
  profile = mkdtempSync(join(tmpdir(), "matchgrain-chromium-"));
  ctx = await chromium.launchPersistentContext(profile, {
    executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium",
    headless: true,
    viewport: { width: 1280, height: 1100 },
    args: [
      "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
      "--disable-background-networking", "--disable-component-update", "--disable-sync",
    ],
  });
});

after(async () => {
  await ctx?.close();
  await matchd?.stop();
  if (profile) rmSync(profile, { recursive: true, force: true });
});

/** The page's game state (window.matchgrain), reduced to what tests look at. */
function state(page) {
  return page.evaluate(() => {
    const mg = window.matchgrain;
    if (!mg) return null;
    const v = mg.view;
    return {
      conn: mg.conn,
      snapshots: mg.snapshots,
      pending: mg.pendingIntent,
      resyncing: mg.resyncing,
      error: mg.error,
      reconnects: mg.session ? mg.session.reconnects : 0,
      finished: v ? v.isFinished : false,
      winner: v ? v.winner : -2,
      turn: v ? v.turnNumber : 0,
      eventSeq: v ? v.eventSeq : 0,
      oppHand: v ? v.players[1 - mg.link.seat].hand.length : 0,
      oppHandCount: v ? v.players[1 - mg.link.seat].handCount : 0,
    };
  });
}

async function waitFor(page, what, pred, timeoutMs = 20_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const s = await state(page);
    if (s && pred(s)) return s;
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms; last state ${JSON.stringify(s)}`);
    await page.waitForTimeout(50);
  }
}

// Which button a simple player clicks first: ride, attack, battle, keep
// the hand, then whatever moves the match on.
const PREFERENCE = ["Ride", "Attack", "EnterBattle", "FinishMulligan", "ResolveTrigger", "Choose", "SelectTrigger", "ResolveAbility", "PassGuard", "SkipRide", "EndTurn"];

/** clickOnce clicks the preferred legal action if it is the player's decision; false if it is not. */
async function clickOnce(page) {
  const decision = await page.getAttribute("#decision", "data-state");
  if (decision !== "mine") return false;
  const before = await state(page);
  if (before.pending || before.resyncing) return false;
  const types = await page.$$eval("#actions button:not([disabled])", (bs) => bs.map((b) => b.dataset.intent));
  const pick = PREFERENCE.find((t) => types.includes(t)) ?? types.find((t) => t !== "Concede");
  if (!pick) return false;
  await page.click(`#actions button[data-intent="${pick}"]:not([disabled])`);
  // The result, then a fresh snapshot: the page is ready for the next decision.
  await waitFor(page, `after ${pick}`, (s) => !s.pending && s.snapshots > before.snapshots);
  await page.waitForTimeout(70); // under the protocol's 16 intents per second
  return true;
}

async function newBotMatch(page, base, name) {
  await page.goto(`http://${base}/`);
  await page.fill("#name", name);
  await page.click("#play-bot");
  await page.waitForSelector("#decision[data-state]", { timeout: 20_000 });
}

test("a whole match against the bot, played by clicking", { timeout: 300_000 }, async () => {
  const page = await ctx.newPage();
  await newBotMatch(page, matchd.http, "Clicker");
  const matchId = (await state(page)) && (await page.evaluate(() => window.matchgrain.link.matchId));
  assert.match(matchId, /\S+/);
  let clicks = 0;
  let shot = false;
  const deadline = Date.now() + 240_000;
  for (;;) {
    const s = await state(page);
    if (s.finished) break;
    assert.ok(Date.now() < deadline, `match not over after ${clicks} clicks: ${JSON.stringify(s)}`);
    // Hidden information stays hidden: the opponent's hand is a count.
    assert.equal(s.oppHand, 0, "the page holds the opponent's hand cards");
    if (!shot && s.turn >= 4 && (await page.$("#battle-box"))) {
      await page.screenshot({ path: join(artifacts, "board.png"), fullPage: true });
      shot = true;
    }
    if (await clickOnce(page)) clicks++;
    else await page.waitForTimeout(40);
  }
  const s = await state(page);
  assert.ok(s.winner === 0 || s.winner === 1, `no winner: ${JSON.stringify(s)}`);
  const result = await page.textContent("#decision");
  assert.match(result, s.winner === 0 ? /You win/ : /You lose/);
  assert.equal(await page.$$eval("#opp-hand [data-printing]", (n) => n.length), 0);
  if (!shot) await page.screenshot({ path: join(artifacts, "board.png"), fullPage: true });
  await page.screenshot({ path: join(artifacts, "board-final.png"), fullPage: true });
  // The protocol log opens on demand and shows frames both ways.
  await page.click("#toggle-log");
  const wires = await page.$$eval("#log .wire", (ws) => ws.map((w) => w.className));
  assert.ok(wires.some((c) => c.includes("in")) && wires.some((c) => c.includes("out")), "protocol log is empty");
  assert.ok(!(await page.textContent("#log")).includes('"ticket":"v1'), "the protocol log shows a ticket");
  console.log(`match ${matchId}: ${result} after ${clicks} clicks, turn ${s.turn}`);
  await page.close();
});

test("the page reconnects by itself after its connection is cut mid-decision", { timeout: 120_000 }, async () => {
  const proxy = await startProxy(matchd.http);
  const page = await ctx.newPage();
  try {
    await newBotMatch(page, proxy.addr, "Reconnector");
    // Play into the match, then wait for a decision of ours.
    for (let i = 0; i < 3; ) if (await clickOnce(page)) i++; else await page.waitForTimeout(40);
    await page.waitForSelector('#decision[data-state="mine"]', { timeout: 20_000 });
    const before = await state(page);
    assert.equal(before.conn, "open");
    const cut = proxy.cut();
    assert.ok(cut > 0, "no connection to cut");
    const back = await waitFor(page, "reconnected", (s) => s.reconnects >= 1 && s.conn === "open", 30_000);
    assert.ok(back.eventSeq >= before.eventSeq, `state went back: ${back.eventSeq} < ${before.eventSeq}`);
    await page.waitForSelector('#decision[data-state="mine"]', { timeout: 20_000 });
    // The decision is still ours and the match goes on from the new connection.
    let moved = 0;
    const deadline = Date.now() + 30_000;
    while (moved < 3 && Date.now() < deadline) if (await clickOnce(page)) moved++; else await page.waitForTimeout(40);
    assert.equal(moved, 3, "could not play after the reconnect");
    const after = await state(page);
    assert.ok(after.eventSeq > before.eventSeq, "no progress after the reconnect");
    console.log(`cut ${cut} connections at seq ${before.eventSeq}; reconnected (${after.reconnects}x) and played on to seq ${after.eventSeq}`);
  } finally {
    await page.close();
    await proxy.close();
  }
});

test("the ops console shows members and the live match with its clocks and owner", { timeout: 60_000 }, async () => {
  const page = await ctx.newPage();
  await newBotMatch(page, matchd.http, "Watched");
  const matchId = await page.evaluate(() => window.matchgrain.link.matchId);
  const con = await ctx.newPage();
  await con.goto(`http://${matchd.http}/console`);
  // Without the token the API refuses.
  const unauth = await con.evaluate(async () => (await fetch("/api/admin/matches")).status);
  assert.equal(unauth, 401);
  await con.fill("#token", "wrong");
  await con.click("#login button");
  await con.waitForSelector("#login-error:has-text('wrong token')");
  await con.fill("#token", matchd.adminToken);
  await con.click("#login button");
  const row = await con.waitForSelector(`#matches tr[data-match="${matchId}"]`, { timeout: 20_000 });
  const text = await row.textContent();
  assert.match(text, /Watched vs Trainer \(bot\) \[bot\]/);
  assert.match(text, /bank \d+:\d\d/);
  const members = await con.$$eval("#members tbody tr", (rs) => rs.map((r) => r.textContent));
  assert.equal(members.length, 1);
  assert.match(members[0], /\(this\)/);
  const owner = await row.$eval("td:nth-child(3)", (td) => td.textContent);
  assert.ok(members[0].startsWith(owner.replace("…", "")), `owner ${owner} is not the member ${members[0]}`);
  assert.ok((await con.$$eval("#metrics tbody tr", (rs) => rs.length)) > 3, "no metrics shown");
  await con.screenshot({ path: join(artifacts, "console.png"), fullPage: true });
  await con.close();
  await page.close();
});

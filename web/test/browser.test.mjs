// The ops console in a real headless Chromium (Debian's /usr/bin/chromium,
// or $CHROMIUM), against a real matchd: the console showing a live match
// started from the play page (whose own tests are play.test.mjs). The
// console's screenshot is kept in web/test/artifacts/.
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { chromium } from "playwright-core";

import { repoRoot, startMatchd } from "./matchd.mjs";

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

async function newBotMatch(page, base, name) {
  await page.goto(`http://${base}/`);
  await page.fill("#name", name);
  await page.click("#play-bot");
  await page.waitForSelector("#decision[data-state=mine], #decision[data-state=theirs]", { timeout: 20_000 });
}

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
  // Values a person reads: no 0.27964386800000013, seconds with their unit.
  const metrics = await con.$$eval("#metrics tbody tr", (rs) => rs.map((r) => [r.cells[0].textContent, r.cells[1].textContent]));
  for (const [name, value] of metrics) {
    const [, whole, fraction] = /^-?([\d,]+)(?:\.(\d+))?(?: m?s)?$/.exec(value) ?? [];
    assert.ok(whole !== undefined, `${name}: ${value} is not a readable number`);
    if (fraction) assert.ok((whole.replace(/^0+|,/g, "") + fraction).replace(/^0+/, "").length <= 4, `${name}: ${value} has more than 4 significant digits`);
  }
  const appendTime = metrics.find(([name]) => name.startsWith("matchgrain_store_append_seconds_sum"));
  assert.ok(appendTime, "the console shows no append time");
  assert.match(appendTime[1], / m?s$/);
  await con.screenshot({ path: join(artifacts, "console.png"), fullPage: true });
  await con.close();
  await page.close();
});

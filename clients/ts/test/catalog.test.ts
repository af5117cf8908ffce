// The catalog generated from the game's printings.
import assert from "node:assert/strict";
import { test } from "node:test";

import { lookupPrinting, printings } from "../src/index.js";

test("the catalog holds printed stats, sorted by id", () => {
  const all = printings();
  assert.ok(all.length >= 20, `only ${all.length} printings`);
  assert.deepEqual(
    all.map((p) => p.id),
    [...all.map((p) => p.id)].sort(),
  );
  for (const p of all) {
    assert.deepEqual(lookupPrinting(p.id), p);
    assert.ok(p.grade >= 0 && p.grade <= 3 && p.power > 0 && p.critical >= 1, `${p.id}: implausible stats`);
  }
  assert.ok(all.some((p) => p.starter), "no starter card");
  assert.equal(lookupPrinting("no-such-card"), undefined);
});

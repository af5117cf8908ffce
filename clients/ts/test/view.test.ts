// The view kept from events (ViewKeeper). Its agreement with real snapshots
// is checked in matchd.test.ts; these pin the rules that need no server.
import assert from "node:assert/strict";
import { test } from "node:test";

import { ViewKeeper, printings, type Event } from "../src/index.js";

let seq = 0;
const apply = (k: ViewKeeper, event: Event) => k.apply({ seq: ++seq, event });
const concede = { key: 17 as const, type: "Concede" as const, body: {} };

test("draws, a Decision and its legal intents, for the decider and the other seat", () => {
  const card = printings().find((p) => p.grade === 1)!;
  const me = ViewKeeper.fresh(0);
  const other = ViewKeeper.fresh(1);
  const spectator = ViewKeeper.fresh(2);
  const started: Event = { key: 0, type: "GameStarted", body: { firstPlayer: 0, deckSize: [50, 50] } };
  for (const k of [me, other, spectator]) apply(k, started);
  apply(me, { key: 3, type: "CardsDrawn", body: { player: 0, count: 1, cards: [{ instanceId: 7, printingId: card.id }] } });
  apply(other, { key: 3, type: "CardsDrawn", body: { player: 0, count: 1, cards: [] } });
  const ride = { key: 2 as const, type: "Ride" as const, body: { printingId: card.id } };
  // Built by hand: the generated Event type has Decision only on a protocol with it.
  const decision = (legalIntents: (typeof ride | typeof concede)[]): Event =>
    ({
      key: 28,
      type: "Decision",
      body: { player: 0, pending: false, trigger: null, battle: null, units: [], choice: null, ability: null, order: null, legalIntents },
    }) as unknown as Event;
  apply(me, decision([ride, concede]));
  apply(other, decision([]));
  apply(spectator, decision([]));

  const mine = me.view;
  assert.equal(mine.players[0].handCount, 1);
  assert.equal(mine.players[0].deckCount, 49);
  assert.deepEqual(mine.players[0].hand.map((c) => [c.instanceId, c.power, c.critical]), [[7, card.power, card.critical]]);
  assert.deepEqual(me.legalIntents, [ride, concede]);
  assert.equal(mine.activePlayer, 0);

  const theirs = other.view;
  assert.equal(theirs.players[0].handCount, 1);
  assert.deepEqual(theirs.players[0].hand, [], "the other seat never sees the card");
  assert.deepEqual(other.legalIntents, [concede], "a seat that does not decide may only concede");
  assert.deepEqual(spectator.legalIntents, [], "a spectator may send nothing");
});

test("diff ignores the clock, the match id and the names, and names every other difference", () => {
  const k = ViewKeeper.fresh(0);
  const snap = k.view;
  snap.clock.bank0Ms = 99_000;
  snap.matchId = "m-1";
  snap.players[1].name = "Bob";
  assert.deepEqual(k.diff(snap), []);
  snap.players[1].deckCount = 3;
  snap.legalIntents = [concede];
  const d = k.diff(snap);
  assert.equal(d.length, 2, d.join("\n"));
  assert.match(d.join("\n"), /view\.players\[1\]\.deckCount: local 0, server 3/);
  assert.match(d.join("\n"), /view\.legalIntents/);
});

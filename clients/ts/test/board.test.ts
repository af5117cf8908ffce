// The Board follows circles, damage, turn and result from events, like the
// Go client's Board (client/board.go).
import assert from "node:assert/strict";
import { test } from "node:test";

import { applyEvent, diffBoards, emptyBoard, type Event, type EventEnvelope } from "../src/index.js";

const ref = (instanceId: number) => ({ instanceId, printingId: `P-${instanceId}` });
let seq = 0;
const env = (event: Event): EventEnvelope => ({ seq: ++seq, event });

test("events move units, count damage, heal and finish", () => {
  const b = emptyBoard();
  const events: Event[] = [
    { key: 1, type: "TurnStarted", body: { turnNumber: 3, player: 0 } },
    { key: 6, type: "StandUp", body: { vanguards: [ref(1), ref(51)] } },
    { key: 9, type: "Call", body: { player: 0, card: ref(2), slot: 3 } },
    { key: 9, type: "Call", body: { player: 0, card: ref(3), slot: 0 } },
    { key: 10, type: "Move", body: { player: 0, card: ref(2), fromSlot: 3, toSlot: 0, swapped: ref(3) } },
    { key: 9, type: "Call", body: { player: 1, card: ref(52), slot: 4 } },
    { key: 13, type: "Guard", body: { player: 1, card: ref(52), fromZone: 3, fromSlot: 4, shield: 5000, perfect: false } },
    { key: 7, type: "Ride", body: { player: 1, card: ref(53), previous: ref(51) } },
    { key: 18, type: "Damage", body: { player: 1, card: ref(54), damageCount: 2 } },
    { key: 16, type: "TriggerResolved", body: { player: 1, card: ref(55), trigger: 4, powerTarget: -1, effectTarget: -1, healed: ref(54) } },
    { key: 19, type: "Retire", body: { player: 0, card: ref(3), fromZone: 3, fromSlot: 3, cause: 0 } },
    { key: 9, type: "Call", body: { player: 7, card: ref(99), slot: 2 } }, // out of range: ignored
    { key: 27, type: "GameFinished", body: { winner: 0, reason: 2 } },
  ];
  for (const e of events) applyEvent(b, env(e));
  assert.deepEqual(b, {
    eventSeq: seq,
    turnNumber: 3,
    finished: true,
    winner: 0,
    reason: 2,
    players: [
      { vanguard: 1, rearGuards: [2, 0, 0, 0, 0], damage: 0 },
      { vanguard: 53, rearGuards: [0, 0, 0, 0, 0], damage: 1 },
    ],
  });
});

test("diffBoards names every difference and tolerates an unknown vanguard", () => {
  const a = emptyBoard();
  const b = emptyBoard();
  b.players[0].vanguard = 9; // unknown locally (face-down starter): not a difference
  assert.deepEqual(diffBoards(a, b), []);
  b.players[1].rearGuards[2] = 4;
  b.players[1].damage = 3;
  b.turnNumber = 2;
  const d = diffBoards(a, b);
  assert.equal(d.length, 3);
  assert.match(d.join("\n"), /players\[1\]\.rearGuards/);
  assert.match(d.join("\n"), /players\[1\]\.damage: local 0, server 3/);
});

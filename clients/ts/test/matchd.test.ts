// Two TypeScript sessions play a whole match against a real matchd (built
// from this repository, embedded store, loopback ports), each losing its
// connection once mid-match; their boards, kept from events, are checked
// against every snapshot at the same eventSeq and against the final one.
// And a session reconnects with the resume ticket matchd gave it.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";

import { Admin, EVENTS, SeatSpectator, Session, boardFromView, diffBoards, type ServerFrame, type WireEntry } from "../src/index.js";
import { playSeat, removeBuild, startMatchd, type Matchd } from "./matchd.js";

let node: Matchd;

/** eventComplete: this repository's protocol has the Decision event, so its matchd must send it (the Decision event, docs/protocol.md). */
const eventComplete = EVENTS.some((e) => e.type === "Decision");

before(async () => {
  node = await startMatchd();
});

after(async () => {
  await node?.stop();
  removeBuild();
});

/** lateListener buffers frames until the player subscribes, so no frame after the hello is missed. */
function lateListener(): { listener: (f: ServerFrame) => void; subscribe: (l: (f: ServerFrame) => void) => void } {
  const buf: ServerFrame[] = [];
  let handler: ((f: ServerFrame) => void) | undefined;
  return {
    listener: (f) => (handler ? handler(f) : buf.push(f)),
    subscribe: (l) => {
      handler = l;
      for (const f of buf.splice(0)) l(f);
    },
  };
}

test("two sessions play a full match against matchd, each reconnecting once mid-match, a spectator watching", { timeout: 300_000 }, async (t) => {
  const t0 = Date.now();
  const admin = new Admin(`http://${node.http}`, node.adminToken);
  const decks = await admin.decks();
  assert.ok(decks.length > 0, "the node lists no decks");
  const matchId = await admin.createMatch(
    [
      { name: "TS A", deck: decks[0]!.id },
      { name: "TS B", deck: decks[decks.length - 1]!.id },
    ],
    "20261202",
  );
  const url = `ws://${node.http}/game`;
  const wire: WireEntry[][] = [[], []];
  const ticketsAsked = [0, 0];
  const sessions: Session[] = [];
  const plays: Promise<Awaited<ReturnType<typeof playSeat>>>[] = [];
  const seen: ServerFrame[][] = [[], []];
  // A spectator (docs/protocol.md §14) watches from the start.
  const watched: ServerFrame[] = [];
  const spectator = await Session.start(
    { url, ticket: admin.ticketSource(matchId, SeatSpectator), clientBuild: "matchgrain-ts-test-spectator", backoffMs: [0, 200, 500], maxAttempts: -1 },
    (f) => watched.push(f),
  );
  try {
    for (const seat of [0, 1]) {
      const { listener, subscribe } = lateListener();
      const source = admin.ticketSource(matchId, seat);
      const s = await Session.start(
        {
          url,
          ticket: () => {
            ticketsAsked[seat]!++;
            return source();
          },
          clientBuild: "matchgrain-ts-test",
          backoffMs: [0, 200, 500],
          maxAttempts: -1,
          onWire: (e) => wire[seat]!.push(e),
        },
        listener,
      );
      sessions.push(s);
      // Seat 0 drops its connection right after its 6th intent, seat 1
      // after its 11th: the intent in flight is re-sent under its id.
      plays.push(
        playSeat(s, { seed: 7 + seat, dropAfter: seat === 0 ? 6 : 11, onFrame: (f) => seen[seat]!.push(f) }, subscribe),
      );
    }
    const results = await Promise.all(plays);

    const [a, b] = results as [(typeof results)[0], (typeof results)[0]];
    for (let i = 0; i < 300 && !spectator.view?.isFinished; i++) await new Promise((r) => setTimeout(r, 100));
    assert.equal(spectator.seat, SeatSpectator);
    assert.equal(spectator.view?.isFinished, true, "the spectator never saw the end");
    assert.equal(spectator.view?.winner, a.final.winner, "the spectator saw another winner");
    assert.deepEqual(spectator.legalIntents, [], "a spectator may send nothing");
    assert.deepEqual(spectator.consistency().mismatches, [], "the spectator's view kept from events disagrees with its snapshots");
    for (const f of watched) {
      if (f.type === "ServerSnapshot") assert.ok(f.body.view.players.every((p) => p.hand.length === 0), "a hand reached the spectator");
      if (f.type !== "ServerEvents") continue;
      for (const e of f.body.events) {
        if (e.event.type === "CardsDrawn") assert.deepEqual(e.event.body.cards, [], `seq ${e.seq}: a drawn card reached the spectator`);
      }
    }
    assert.equal(a.final.isFinished, true);
    assert.equal(a.final.winner, b.final.winner, "the seats disagree on the winner");
    assert.equal(a.final.eventSeq, b.final.eventSeq, "the seats disagree on the last eventSeq");
    for (const seat of [0, 1] as const) {
      const s = sessions[seat]!;
      const r = results[seat]!;
      const { checked, viewChecked, mismatches } = s.consistency();
      assert.deepEqual(mismatches, [], `seat ${seat}: the board or view kept from events disagrees with snapshots`);
      assert.ok(checked >= 5, `seat ${seat}: only ${checked} snapshots were compared with the board`);
      if (eventComplete) {
        assert.ok(viewChecked >= 5, `seat ${seat}: only ${viewChecked} snapshots were compared with the kept view`);
        assert.ok(r.fromEvents > r.intents / 2, `seat ${seat}: only ${r.fromEvents} of ${r.intents} decisions came from events`);
      } else {
        assert.equal(r.fromEvents, 0, `seat ${seat}: decisions from events without Decision events`);
      }
      assert.deepEqual(diffBoards(s.board, boardFromView(r.final)), [], `seat ${seat}: final board differs`);
      assert.ok(s.reconnects >= 1, `seat ${seat}: the dropped connection was not re-established`);
      // A reconnect uses a fresh ticket, or the resume ticket matchd sent (docs/protocol.md §4 point 7).
      const resumeTickets = wire[seat]!.filter((e) => e.dir === "in" && e.frame.type === "ServerResumeTicket").length;
      assert.ok(ticketsAsked[seat]! >= 2 || resumeTickets > 0, `seat ${seat}: a reconnect must use a fresh ticket or a resume ticket`);
      assert.ok(r.intents > 10, `seat ${seat}: only ${r.intents} intents`);
      assert.equal(s.pendingIntents, 0, `seat ${seat}: intents left without a result`);
      assert.equal(s.seat, seat);

      // Exactly once, in order: delivered events never repeat or go back.
      let last = 0;
      for (const f of seen[seat]!) {
        if (f.type === "ServerSnapshot") last = f.body.view.eventSeq;
        if (f.type !== "ServerEvents") continue;
        for (const e of f.body.events) {
          assert.ok(e.seq > last, `seat ${seat}: event ${e.seq} delivered after ${last}`);
          last = e.seq;
        }
      }
      // The resume: the hello after the drop asked from lastSeq, and every
      // intent id sent again was sent before (same id) and answered once.
      const hellos = wire[seat]!.filter((e) => e.dir === "out" && e.frame.type === "ClientHello");
      assert.ok(hellos.length >= 2);
      assert.ok(
        hellos.slice(1).some((h) => h.frame.type === "ClientHello" && h.frame.body.resumeFromSeq > 0),
        `seat ${seat}: no hello resumed from a seq`,
      );
      assert.ok(
        hellos.every((h) => h.frame.type === "ClientHello" && h.frame.body.ticket === "…"),
        "tickets must not reach the protocol log",
      );
      const applied = new Map<string, number>();
      for (const e of wire[seat]!) {
        if (e.dir === "in" && e.frame.type === "ServerIntentResult" && !e.frame.body.duplicate) {
          applied.set(e.frame.body.intentId, (applied.get(e.frame.body.intentId) ?? 0) + 1);
        }
      }
      for (const [id, n] of applied) assert.equal(n, 1, `seat ${seat}: intent ${id} applied ${n} times`);
      // The intent sent right before the drop went out again under the same id.
      const sentIds = new Map<string, number>();
      for (const e of wire[seat]!) {
        if (e.dir === "out" && e.frame.type === "ClientIntent") {
          sentIds.set(e.frame.body.intentId, (sentIds.get(e.frame.body.intentId) ?? 0) + 1);
        }
      }
      const resent = [...sentIds.values()].filter((n) => n > 1).length;
      assert.ok(resent >= 1, `seat ${seat}: no intent was re-sent under its id after the drop`);
      t.diagnostic(
        `seat ${seat}: ${r.intents} intents (${r.fromEvents} decided from events, ${r.fromSnapshots} from snapshots), ` +
          `${r.rejected} rejected, ${resent} re-sent, ${r.duplicates} answered duplicate, ` +
          `${checked} board and ${viewChecked} view checks against snapshots, ${s.reconnects} reconnects, last seq ${r.final.eventSeq}`,
      );
    }
  } finally {
    await Promise.all([...sessions, spectator].map((s) => s.leave("test over", 3_000)));
  }
  for (const s of sessions) assert.equal(s.err, null);
  t.diagnostic(`match played in ${((Date.now() - t0) / 1000).toFixed(1)} s (2 shared cores)`);
});

test("a session reconnects to matchd with its resume ticket, asking for one ticket in all", { timeout: 60_000 }, async () => {
  const admin = new Admin(`http://${node.http}`, node.adminToken);
  const decks = await admin.decks();
  const matchId = await admin.createMatch(
    [
      { name: "TS A", deck: decks[0]!.id },
      { name: "TS B", deck: decks[decks.length - 1]!.id },
    ],
    "20261203",
  );
  const source = admin.ticketSource(matchId, 0);
  let ticketsAsked = 0;
  const wire: WireEntry[] = [];
  const s = await Session.start({
    url: `ws://${node.http}/game`,
    ticket: () => {
      ticketsAsked++;
      return source();
    },
    clientBuild: "matchgrain-ts-test-resume",
    backoffMs: [0, 200, 500],
    maxAttempts: -1,
    onWire: (e) => wire.push(e),
  });
  try {
    const gotTicket = () => wire.some((e) => e.dir === "in" && e.frame.type === "ServerResumeTicket");
    for (let i = 0; i < 100 && !gotTicket(); i++) await new Promise((r) => setTimeout(r, 50));
    assert.ok(gotTicket(), "matchd sent no ServerResumeTicket to a session that asked for one");
    s.drop();
    for (let i = 0; i < 200 && !(s.reconnects === 1 && s.state === "open"); i++) await new Promise((r) => setTimeout(r, 50));
    assert.equal(s.reconnects, 1, `the session did not reconnect (state ${s.state}, err ${String(s.err)})`);
    assert.equal(s.state, "open");
    assert.equal(ticketsAsked, 1, "the reconnect asked for a ticket instead of using the resume ticket");
    const hellos = wire.filter((e) => e.dir === "out" && e.frame.type === "ClientHello");
    assert.equal(hellos.length, 2);
    assert.ok(hellos.every((h) => h.frame.type === "ClientHello" && h.frame.body.resumeTickets && h.frame.body.ticket === "…"));
    assert.ok(
      wire.every((e) => e.frame.type !== "ServerResumeTicket" || e.frame.body.ticket === "…"),
      "resume tickets must not reach the protocol log",
    );
  } finally {
    await s.leave("test over", 3_000);
  }
  assert.equal(s.err, null);
});

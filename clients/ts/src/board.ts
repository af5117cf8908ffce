// Board: the part of a match a client follows from public events alone,
// mirroring the Go client's Board (client/board.go) field for field.

import { NoWinner, Zone, type EventEnvelope, type FinishReason, type MatchView } from "./schema.gen.js";

/** BoardPlayer is one player's circles and damage. */
export interface BoardPlayer {
  /** vanguard is the instance id on the vanguard circle; 0 when unknown (the opponent's face-down starter before stand-up). */
  vanguard: number;
  /** rearGuards are the instance ids on circles 0..4; 0 is empty. */
  rearGuards: [number, number, number, number, number];
  /** damage counts face-up and face-down damage cards. */
  damage: number;
}

/**
 * Board is who stands on which circle, damage counts, turn and result, kept
 * without the rules engine. A Session keeps one from the last snapshot plus
 * the events after it and compares it with every later snapshot at the same
 * eventSeq: a difference means a lost, duplicated or misordered event (or a
 * server bug).
 */
export interface Board {
  /** eventSeq is the last event applied. */
  eventSeq: number;
  turnNumber: number;
  finished: boolean;
  /** winner is NoWinner (-1) while the match runs and on a draw. */
  winner: number;
  /**
   * reason is why the match ended: null while it runs, and after a snapshot
   * from a server that predates MatchView.finishReason.
   */
  reason: FinishReason | null;
  players: [BoardPlayer, BoardPlayer];
}

function emptyPlayer(): BoardPlayer {
  return { vanguard: 0, rearGuards: [0, 0, 0, 0, 0], damage: 0 };
}

/** emptyBoard is a board before any snapshot. */
export function emptyBoard(): Board {
  return { eventSeq: 0, turnNumber: 0, finished: false, winner: NoWinner, reason: null, players: [emptyPlayer(), emptyPlayer()] };
}

/** cloneBoard returns a deep copy. */
export function cloneBoard(b: Board): Board {
  return {
    ...b,
    players: [
      { ...b.players[0], rearGuards: [...b.players[0].rearGuards] },
      { ...b.players[1], rearGuards: [...b.players[1].rearGuards] },
    ],
  };
}

/** boardFromView extracts the Board of a snapshot. */
export function boardFromView(v: MatchView): Board {
  const b = emptyBoard();
  b.eventSeq = Number(v.eventSeq);
  b.turnNumber = v.turnNumber;
  b.finished = v.isFinished;
  b.winner = v.winner;
  b.reason = v.finishReason;
  v.players.forEach((p, i) => {
    const bp = b.players[i as 0 | 1];
    if (p.vanguard) bp.vanguard = p.vanguard.instanceId;
    p.rearGuards.forEach((c, slot) => {
      if (c) bp.rearGuards[slot] = c.instanceId;
    });
    bp.damage = p.faceDownDamage + p.faceUpDamage.length;
  });
  return b;
}

function validPlayer(p: number): p is 0 | 1 {
  return p === 0 || p === 1;
}
function validSlot(s: number): boolean {
  return Number.isInteger(s) && s >= 0 && s < 5;
}

/**
 * applyEvent applies one event to b in place. Events that do not touch the
 * Board are ignored; so are events naming players or circles out of range
 * (the Board then disagrees with the next snapshot, which is how such a bug
 * shows).
 */
export function applyEvent(b: Board, e: EventEnvelope): void {
  const seq = Number(e.seq);
  if (seq > b.eventSeq) b.eventSeq = seq;
  const ev = e.event;
  switch (ev.type) {
    case "TurnStarted":
      b.turnNumber = ev.body.turnNumber;
      break;
    case "StandUp":
      ev.body.vanguards.forEach((c, i) => {
        b.players[i as 0 | 1].vanguard = c.instanceId;
      });
      break;
    case "Ride":
      if (validPlayer(ev.body.player)) b.players[ev.body.player].vanguard = ev.body.card.instanceId;
      break;
    case "Call":
      if (validPlayer(ev.body.player) && validSlot(ev.body.slot)) {
        b.players[ev.body.player].rearGuards[ev.body.slot] = ev.body.card.instanceId;
      }
      break;
    case "Move": {
      const { player, fromSlot, toSlot, card, swapped } = ev.body;
      if (validPlayer(player) && validSlot(fromSlot) && validSlot(toSlot)) {
        const rg = b.players[player].rearGuards;
        rg[toSlot] = card.instanceId;
        rg[fromSlot] = swapped ? swapped.instanceId : 0;
      }
      break;
    }
    case "Retire":
      if (validPlayer(ev.body.player) && ev.body.fromZone === Zone.RC && validSlot(ev.body.fromSlot)) {
        b.players[ev.body.player].rearGuards[ev.body.fromSlot] = 0;
      }
      break;
    case "Guard":
      // An intercept moves a rear-guard to the guardian circle.
      if (validPlayer(ev.body.player) && ev.body.fromZone === Zone.RC && validSlot(ev.body.fromSlot)) {
        b.players[ev.body.player].rearGuards[ev.body.fromSlot] = 0;
      }
      break;
    case "Damage":
      if (validPlayer(ev.body.player)) b.players[ev.body.player].damage = ev.body.damageCount;
      break;
    case "TriggerResolved":
      if (validPlayer(ev.body.player) && ev.body.healed && b.players[ev.body.player].damage > 0) {
        b.players[ev.body.player].damage--;
      }
      break;
    case "GameFinished":
      b.finished = true;
      b.winner = ev.body.winner;
      b.reason = ev.body.reason;
      break;
  }
}

/** diffBoards lists the differences of local from server, empty when they agree. */
export function diffBoards(local: Board, server: Board): string[] {
  const d: string[] = [];
  const add = (field: string, mine: unknown, theirs: unknown) =>
    d.push(`${field}: local ${JSON.stringify(mine)}, server ${JSON.stringify(theirs)}`);
  if (local.eventSeq !== server.eventSeq) add("eventSeq", local.eventSeq, server.eventSeq);
  if (local.turnNumber !== server.turnNumber) add("turnNumber", local.turnNumber, server.turnNumber);
  if (local.finished !== server.finished) add("finished", local.finished, server.finished);
  if (local.winner !== server.winner) add("winner", local.winner, server.winner);
  if (local.reason !== null && server.reason !== null && local.reason !== server.reason) {
    add("finishReason", local.reason, server.reason);
  }
  for (const i of [0, 1] as const) {
    const p = local.players[i];
    const q = server.players[i];
    if (p.vanguard !== q.vanguard && p.vanguard !== 0 && q.vanguard !== 0) {
      add(`players[${i}].vanguard`, p.vanguard, q.vanguard);
    }
    if (p.rearGuards.some((x, s) => x !== q.rearGuards[s])) add(`players[${i}].rearGuards`, p.rearGuards, q.rearGuards);
    if (p.damage !== q.damage) add(`players[${i}].damage`, p.damage, q.damage);
  }
  return d;
}

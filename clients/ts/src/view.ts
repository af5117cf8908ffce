// ViewKeeper: the seat's whole MatchView kept from events alone
// (docs/protocol.md, the Decision event), the TypeScript counterpart of the Go client's
// view (client/view.go): zones and counts from the movement events, phase
// and turn from TurnStarted and PhaseStarted, and everything the rules derive
// (decider, pending decision, legal intents, trigger, battle, unit power,
// critical and rest state) from the Decision that ends every batch. Card
// stats come from the catalog.

import { lookupPrinting } from "./catalog.js";
import {
  EffectTargetFaceDownDamage,
  NoWinner,
  Phase,
  SeatSpectator,
  SlotVanguard,
  SoulCause,
  SoulOp,
  Step,
  Zone,
  type AbilityView,
  type BattleView,
  type CardRef,
  type CardView,
  type ChoiceView,
  type ClockView,
  type Event,
  type EventEnvelope,
  type Intent,
  type MatchView,
  type OrderView,
  type PlayerView,
  type TriggerView,
} from "./schema.gen.js";

/**
 * DecisionBody is the body of the Decision event (key 28) that ends every
 * batch (docs/protocol.md). It is spelled out here so that this file
 * also reads the generated schema of a protocol without the event.
 */
export interface DecisionBody {
  player: number;
  pending: boolean;
  trigger: TriggerView | null;
  battle: BattleView | null;
  units: {
    player: number;
    slot: number;
    card: CardRef;
    rested: boolean;
    faceUp: boolean;
    power: number;
    critical: number;
  }[];
  choice: ChoiceView | null;
  ability: AbilityView | null;
  order: OrderView | null;
  legalIntents: Intent[];
}

/** isDecision reports whether e is the Decision event that ends a batch. */
export function isDecision(e: Event): e is Event & { body: DecisionBody } {
  return (e.type as string) === "Decision" && e.body !== null;
}

interface DamageCard {
  ref: CardRef;
  faceUp: boolean;
}

function emptyPlayer(index: number): PlayerView {
  return {
    index,
    name: "",
    handCount: 0,
    deckCount: 0,
    hand: [],
    vanguard: null,
    rearGuards: [null, null, null, null, null],
    guardian: [],
    soul: [],
    drop: [],
    trigger: null,
    faceDownDamage: 0,
    faceUpDamage: [],
    isDefeated: false,
  };
}

function emptyClock(): ClockView {
  return { decisionPlayer: 0, turnDeadlineMs: 0, bank0Ms: 0, bank1Ms: 0, isRunning: false, serverTimeMs: 0 };
}

/** cloneView deep-copies a view (views are plain data). */
export function cloneView(v: MatchView): MatchView {
  return structuredCloneCompat(v);
}

function structuredCloneCompat<T>(v: T): T {
  const sc = (globalThis as { structuredClone?: <U>(x: U) => U }).structuredClone;
  if (sc) return sc(v);
  return JSON.parse(JSON.stringify(v, (_k, x) => (typeof x === "bigint" ? Number(x) : x))) as T;
}

/** cardView is a face-up card as the catalog prints it. */
function cardView(r: CardRef): CardView {
  const p = lookupPrinting(r.printingId);
  return {
    instanceId: r.instanceId,
    printingId: r.printingId,
    rested: false,
    faceUp: true,
    basePower: p?.power ?? 0,
    power: p?.power ?? 0,
    baseCritical: p?.critical ?? 0,
    critical: p?.critical ?? 0,
  };
}

function remove(cs: CardView[], id: number): void {
  const i = cs.findIndex((c) => c.instanceId === id);
  if (i >= 0) cs.splice(i, 1);
}

function validSlot(s: number): boolean {
  return Number.isInteger(s) && s >= 0 && s < 5;
}

/**
 * ViewKeeper keeps one seat's MatchView from events. After every complete
 * batch (each ends with a Decision event) view equals a fresh snapshot at
 * the same eventSeq, but for the clock (from ServerClock frames) and the
 * players' names (no event carries them; a snapshot does).
 */
export class ViewKeeper {
  private v: MatchView;
  /** damage is each player's damage zone in order with face states. */
  private damage: [DamageCard[], DamageCard[]] = [[], []];

  private constructor(v: MatchView) {
    this.v = v;
  }

  /** fresh is seat's view before the first event (a match followed from seq 1). */
  static fresh(seat: number): ViewKeeper {
    return new ViewKeeper({
      matchId: "",
      eventSeq: 0,
      you: seat,
      activePlayer: -1,
      turnNumber: 0,
      phase: Phase.Setup,
      step: Step.None,
      isFinished: false,
      winner: NoWinner,
      players: [emptyPlayer(0), emptyPlayer(1)],
      battle: null,
      trigger: null,
      choice: null,
      ability: null,
      order: null,
      opponentChoosing: false,
      clock: emptyClock(),
      legalIntents: [],
      finishReason: null,
    });
  }

  /** fromSnapshot starts from a snapshot. */
  static fromSnapshot(snapshot: MatchView): ViewKeeper {
    const k = new ViewKeeper(cloneView(snapshot));
    k.v.eventSeq = Number(k.v.eventSeq);
    for (const p of [0, 1] as const) {
      const pv = k.v.players[p];
      // The order of face-down damage is not in a snapshot: put it first,
      // where counter-blasts (oldest first) leave it in the usual case; a
      // later DamageFlipped names its cards anyway.
      for (let i = 0; i < pv.faceDownDamage; i++) k.damage[p].push({ ref: { instanceId: 0, printingId: "" }, faceUp: false });
      for (const c of pv.faceUpDamage) {
        k.damage[p].push({ ref: { instanceId: c.instanceId, printingId: c.printingId }, faceUp: true });
      }
    }
    return k;
  }

  /** clone is a deep copy. */
  clone(): ViewKeeper {
    const k = new ViewKeeper(cloneView(this.v));
    k.damage = [this.damage[0].map((d) => ({ ...d })), this.damage[1].map((d) => ({ ...d }))];
    return k;
  }

  /** view is a copy of the kept view. */
  get view(): MatchView {
    return cloneView(this.v);
  }

  /** eventSeq is the last event applied (or covered by setSeq). */
  get eventSeq(): number {
    return this.v.eventSeq;
  }

  /** legalIntents is what this seat may send now, from the last Decision. */
  get legalIntents(): Intent[] {
    return this.v.legalIntents;
  }

  /** setSeq records that every event up to seq was applied (a batch's toSeq covers events this seat may not see). */
  setSeq(seq: number): void {
    if (seq > this.v.eventSeq) this.v.eventSeq = seq;
  }

  /** setClock records the latest ServerClock (the clock is not an event). */
  setClock(c: ClockView): void {
    this.v.clock = { ...c };
  }

  /** setMatch records what the ServerHello says and no event does. */
  setMatch(matchId: string, seat: number): void {
    this.v.matchId = matchId;
    this.v.you = seat;
  }

  private player(p: number): PlayerView | undefined {
    return p === 0 || p === 1 ? this.v.players[p] : undefined;
  }

  private own(p: number): boolean {
    return p === this.v.you;
  }

  private fromHand(p: number, r: CardRef): void {
    const pv = this.player(p)!;
    pv.handCount--;
    if (this.own(p)) remove(pv.hand, r.instanceId);
  }

  private toHand(p: number, r: CardRef): void {
    const pv = this.player(p)!;
    pv.handCount++;
    if (this.own(p)) pv.hand.push(cardView(r));
  }

  private syncDamage(p: 0 | 1): void {
    const pv = this.v.players[p];
    pv.faceDownDamage = 0;
    pv.faceUpDamage = [];
    for (const d of this.damage[p]) {
      if (d.faceUp) pv.faceUpDamage.push(cardView(d.ref));
      else pv.faceDownDamage++;
    }
  }

  private check(p: number, r: CardRef): void {
    const pv = this.player(p);
    if (!pv) return;
    pv.deckCount--;
    pv.trigger = cardView(r);
  }

  /** flip turns one damage card: by identity when known, else the oldest card of the other face whose identity a snapshot did not give. */
  private flip(p: 0 | 1, r: CardRef, up: boolean): void {
    const dmg = this.damage[p];
    const known = dmg.find((d) => d.ref.instanceId === r.instanceId);
    if (known) {
      known.faceUp = up;
      return;
    }
    const i = dmg.findIndex((d) => d.ref.instanceId === 0 && d.faceUp !== up);
    if (i >= 0) dmg[i] = { ref: r, faceUp: up };
  }

  /** apply applies one event (as projected for this seat). */
  apply(e: EventEnvelope): void {
    const seq = Number(e.seq);
    if (seq > this.v.eventSeq) this.v.eventSeq = seq;
    const ev = e.event;
    switch (ev.type) {
      case "GameStarted":
        this.v.phase = Phase.Setup;
        this.v.step = Step.None;
        this.v.turnNumber = 0;
        for (const p of [0, 1] as const) {
          this.v.players[p].deckCount = ev.body.deckSize[p];
          // The face-down starter: its owner learns it from the Decision's units.
          this.v.players[p].vanguard = {
            instanceId: 0,
            printingId: "",
            rested: false,
            faceUp: false,
            basePower: 0,
            power: 0,
            baseCritical: 0,
            critical: 0,
          };
        }
        break;
      case "TurnStarted":
        this.v.turnNumber = ev.body.turnNumber;
        break;
      case "PhaseStarted":
        this.v.phase = ev.body.phase;
        this.v.step = ev.body.step;
        break;
      case "CardsDrawn": {
        const pv = this.player(ev.body.player);
        if (!pv) break;
        pv.deckCount -= ev.body.count;
        pv.handCount += ev.body.count;
        if (this.own(ev.body.player)) for (const c of ev.body.cards) pv.hand.push(cardView(c));
        break;
      }
      case "ReturnedToDeck": {
        const pv = this.player(ev.body.player);
        if (!pv) break;
        pv.deckCount += ev.body.count;
        pv.handCount -= ev.body.count;
        if (this.own(ev.body.player)) for (const c of ev.body.cards) remove(pv.hand, c.instanceId);
        break;
      }
      case "StandUp":
        ev.body.vanguards.forEach((c, p) => {
          this.v.players[p as 0 | 1].vanguard = cardView(c);
        });
        break;
      case "Ride": {
        const pv = this.player(ev.body.player);
        if (!pv) break;
        this.fromHand(ev.body.player, ev.body.card);
        pv.vanguard = cardView(ev.body.card);
        break;
      }
      case "Soul": {
        const pv = this.player(ev.body.player);
        if (!pv) break;
        if (ev.body.op === SoulOp.Out) {
          remove(pv.soul, ev.body.card.instanceId);
          pv.drop.push(cardView(ev.body.card));
        } else if (ev.body.cause === SoulCause.Charge) {
          pv.deckCount--;
          pv.soul.push(cardView(ev.body.card));
        } else {
          pv.soul.push(cardView(ev.body.card)); // the ridden-upon vanguard
        }
        break;
      }
      case "Call": {
        const pv = this.player(ev.body.player);
        if (!pv || !validSlot(ev.body.slot)) break;
        this.fromHand(ev.body.player, ev.body.card);
        pv.rearGuards[ev.body.slot] = cardView(ev.body.card);
        break;
      }
      case "Move": {
        const pv = this.player(ev.body.player);
        const { fromSlot, toSlot } = ev.body;
        if (!pv || !validSlot(fromSlot) || !validSlot(toSlot)) break;
        const rg = pv.rearGuards;
        [rg[fromSlot], rg[toSlot]] = [rg[toSlot]!, rg[fromSlot]!];
        break;
      }
      case "Guard": {
        const pv = this.player(ev.body.player);
        if (!pv) break;
        if (ev.body.fromZone === Zone.RC && validSlot(ev.body.fromSlot)) pv.rearGuards[ev.body.fromSlot] = null;
        else this.fromHand(ev.body.player, ev.body.card);
        pv.guardian.push(cardView(ev.body.card));
        break;
      }
      case "DriveCheck":
      case "DamageCheck":
        this.check(ev.body.player, ev.body.card);
        break;
      case "TriggerResolved": {
        const p = ev.body.player;
        const pv = this.player(p);
        const healed = ev.body.healed;
        if (!pv || !healed) break;
        const dmg = this.damage[p as 0 | 1];
        const i = dmg.findIndex(
          (d) =>
            d.ref.instanceId === healed.instanceId ||
            (d.ref.instanceId === 0 && !d.faceUp && ev.body.effectTarget === EffectTargetFaceDownDamage),
        );
        if (i >= 0) dmg.splice(i, 1);
        pv.drop.push(cardView(healed));
        this.syncDamage(p as 0 | 1);
        break;
      }
      case "Damage": {
        const p = ev.body.player;
        const pv = this.player(p);
        if (!pv) break;
        if (pv.trigger && pv.trigger.instanceId === ev.body.card.instanceId) pv.trigger = null;
        this.damage[p as 0 | 1].push({ ref: ev.body.card, faceUp: true });
        this.syncDamage(p as 0 | 1);
        break;
      }
      case "Retire": {
        const pv = this.player(ev.body.player);
        if (!pv) break;
        if (ev.body.fromZone === Zone.RC) {
          if (validSlot(ev.body.fromSlot)) pv.rearGuards[ev.body.fromSlot] = null;
        } else if (ev.body.fromZone === Zone.GC) {
          remove(pv.guardian, ev.body.card.instanceId);
        }
        pv.drop.push(cardView(ev.body.card));
        break;
      }
      case "Discard": {
        const pv = this.player(ev.body.player);
        if (!pv) break;
        this.fromHand(ev.body.player, ev.body.card);
        pv.drop.push(cardView(ev.body.card));
        break;
      }
      case "CardToHand": {
        const pv = this.player(ev.body.player);
        if (!pv) break;
        if (ev.body.fromZone === Zone.Trigger && pv.trigger && pv.trigger.instanceId === ev.body.card.instanceId) {
          pv.trigger = null;
        }
        this.toHand(ev.body.player, ev.body.card);
        break;
      }
      case "DamageFlipped": {
        const p = ev.body.player;
        if (!this.player(p)) break;
        for (const c of ev.body.cards) this.flip(p as 0 | 1, c, ev.body.faceUp);
        this.syncDamage(p as 0 | 1);
        break;
      }
      case "AbilityResolved": {
        const pv = this.player(ev.body.player);
        if (pv && !this.own(ev.body.player) && ev.body.addedToHand > 0) {
          // The owner learns the card from CardSearchedView; the opponent the count.
          pv.deckCount -= ev.body.addedToHand;
          pv.handCount += ev.body.addedToHand;
        }
        break;
      }
      case "CardSearchedView": {
        const pv = this.player(ev.body.player);
        if (pv && this.own(ev.body.player)) {
          pv.deckCount--;
          this.toHand(ev.body.player, ev.body.card);
        }
        break;
      }
      case "GameFinished": {
        const v = this.v;
        v.isFinished = true;
        v.winner = ev.body.winner;
        v.finishReason = ev.body.reason;
        v.phase = Phase.Finished;
        v.step = Step.None;
        v.activePlayer = -1;
        v.battle = v.trigger = null;
        v.choice = null;
        v.ability = null;
        v.order = null;
        v.opponentChoosing = false;
        v.legalIntents = [];
        for (const p of [0, 1] as const) v.players[p].isDefeated = ev.body.winner !== p;
        break;
      }
      default:
        if (isDecision(ev)) this.decision(ev.body);
    }
  }

  /** decision applies the Decision that ends a batch. */
  private decision(d: DecisionBody): void {
    const v = this.v;
    v.activePlayer = d.player;
    v.battle = d.battle ? { ...d.battle } : null;
    v.trigger = d.trigger ? structuredCloneCompat(d.trigger) : null;
    v.choice = d.choice ? structuredCloneCompat(d.choice) : null;
    v.ability = d.ability ? structuredCloneCompat(d.ability) : null;
    v.order = d.order ? structuredCloneCompat(d.order) : null;
    v.opponentChoosing = d.pending && d.player >= 0 && d.player === 1 - v.you;
    if (d.player < 0 || v.you === SeatSpectator) v.legalIntents = []; // ended, or a spectator (docs/protocol.md §14.4)
    else if (d.player === v.you) v.legalIntents = structuredCloneCompat(d.legalIntents);
    else v.legalIntents = [{ key: 17, type: "Concede", body: {} }]; // the other seat decides
    // Every unit not listed stands face up at printed power and critical.
    for (const pv of v.players) {
      for (const c of [pv.vanguard, ...pv.rearGuards]) {
        if (!c || c.instanceId === 0) continue;
        c.rested = false;
        c.faceUp = true;
        c.power = c.basePower;
        c.critical = c.baseCritical;
      }
    }
    for (const u of d.units) {
      const pv = this.player(u.player);
      if (!pv) continue;
      let c: CardView | null;
      if (u.slot === SlotVanguard) {
        c = pv.vanguard;
        if (!c || c.instanceId !== u.card.instanceId) c = pv.vanguard = cardView(u.card); // the face-down starter, or a repair
      } else if (validSlot(u.slot)) {
        c = pv.rearGuards[u.slot]!;
        if (!c || c.instanceId !== u.card.instanceId) c = pv.rearGuards[u.slot] = cardView(u.card);
      } else {
        continue;
      }
      c.rested = u.rested;
      c.faceUp = u.faceUp;
      c.power = u.power;
      c.critical = u.critical;
    }
  }

  /**
   * diff lists where the kept view differs from a snapshot of the same seq,
   * ignoring the clock (it moves with time), the match id and the names (no
   * event carries them); empty when they agree. At most 16 lines.
   */
  diff(snapshot: MatchView): string[] {
    const a = cloneView(this.v);
    const b = cloneView(snapshot);
    for (const x of [a, b]) {
      x.clock = emptyClock();
      x.matchId = "";
      x.players[0].name = x.players[1].name = "";
    }
    const out: string[] = [];
    diffValue("view", a, b, out);
    return out;
  }
}

function show(x: unknown): string {
  return JSON.stringify(x, (_k, v) => (typeof v === "bigint" ? `${v}` : v));
}

function diffValue(path: string, a: unknown, b: unknown, out: string[]): void {
  if (out.length >= 16) return;
  if (a === null || b === null || typeof a !== "object" || typeof b !== "object") {
    const same = typeof a === "bigint" || typeof b === "bigint" ? String(a) === String(b) : a === b;
    if (!same) out.push(`${path}: local ${show(a)}, server ${show(b)}`);
    return;
  }
  if (Array.isArray(a) || Array.isArray(b)) {
    const x = a as unknown[];
    const y = b as unknown[];
    if (!Array.isArray(a) || !Array.isArray(b) || x.length !== y.length) {
      out.push(`${path}: local ${show(a)}, server ${show(b)}`);
      return;
    }
    for (let i = 0; i < x.length; i++) diffValue(`${path}[${i}]`, x[i], y[i], out);
    return;
  }
  const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
  for (const k of keys) diffValue(`${path}.${k}`, (a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k], out);
}

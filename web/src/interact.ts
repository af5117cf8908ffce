// Direct play: what the player may tap now and what each tap does, worked
// out from the seat's legal intents alone (the server's list, never the
// page's own idea of the rules). A tap either changes the selection (a hand
// card, a unit, a trigger's power target) or sends one legal intent; the
// action bar holds only what has no place on the board (keep the hand, go
// to battle, end the turn, use an ability, don't guard).
import type { Intent, MatchView } from "../../clients/ts/src/index.js";
import { card, cardName, choicePrompt, costText, describe, optionText, slotName, TRIGGER_EFFECTS, TRIGGERS } from "./text.js";

/** Selection is what the player has picked and not yet used. */
export type Selection =
  | { kind: "none" }
  | { kind: "mulligan"; picks: number[] }
  | { kind: "hand"; index: number }
  | { kind: "unit"; slot: number; boost: boolean }
  | { kind: "trigger"; power: number };

export const NONE: Selection = { kind: "none" };

/** Button is one action of the bar. */
export interface Button {
  label: string;
  /** id is stable across renders, for tests and for keeping focus. */
  id: string;
  primary?: boolean;
  disabled?: boolean;
  run: () => void;
}

/** Plan is everything the board and the bar show for one decision. */
export interface Plan {
  /** prompt says what to do now, in words. */
  prompt: string;
  /** targets maps a board key ("hand:2", "me:-1", "opp:3") to what tapping it does. */
  targets: Map<string, () => void>;
  /** selected are the keys drawn as picked. */
  selected: Set<string>;
  buttons: Button[];
  /** rest are legal intents no tap or button offers (listed under "All moves"). */
  rest: Intent[];
}

export interface PlanInput {
  view: MatchView;
  legal: Intent[];
  sel: Selection;
  send: (i: Intent) => void;
  select: (s: Selection) => void;
}

type Of<T extends Intent["type"]> = Extract<Intent, { type: T }>;

function ofType<T extends Intent["type"]>(legal: Intent[], t: T): Of<T>[] {
  return legal.filter((i): i is Of<T> => i.type === t);
}

/** shieldNeeded is the shield (in steps of 5000) that stops the attack: a tie hits. */
export function shieldNeeded(attackerPower: number, targetPower: number, shieldTotal: number): number {
  const short = attackerPower - (targetPower + shieldTotal) + 1;
  return short <= 0 ? 0 : Math.ceil(short / 5000) * 5000;
}

/** plan works out the taps and buttons of the seat's current decision. */
export function plan(inp: PlanInput): Plan {
  const { view: v, legal, send, select } = inp;
  const p: Plan = { prompt: "", targets: new Map(), selected: new Set(), buttons: [], rest: [] };
  const covered = new Set<Intent>();
  const cover = (is: Intent[]) => is.forEach((i) => covered.add(i));
  const playable = legal.filter((i) => i.type !== "Concede" && i.type !== "Unknown");
  if (!playable.length) return p;

  const mulligans = ofType(legal, "Mulligan");
  const keep = ofType(legal, "FinishMulligan")[0];
  const triggers = ofType(legal, "ResolveTrigger");
  const orders = ofType(legal, "SelectTrigger");
  const abilities = ofType(legal, "ResolveAbility");
  const chooses = ofType(legal, "Choose");

  if (mulligans.length || keep) {
    const picks = inp.sel.kind === "mulligan" ? inp.sel.picks : [];
    const pickable = new Set(mulligans.flatMap((m) => m.body.handIndexes));
    for (const i of pickable) {
      p.targets.set(`hand:${i}`, () =>
        select({ kind: "mulligan", picks: picks.includes(i) ? picks.filter((x) => x !== i) : [...picks, i].sort((a, b) => a - b) }),
      );
    }
    picks.forEach((i) => p.selected.add(`hand:${i}`));
    const match = mulligans.find((m) => m.body.handIndexes.length === picks.length && [...m.body.handIndexes].sort((a, b) => a - b).every((x, k) => x === picks[k]));
    p.prompt = "Your starting hand. Tap the cards you want to send back and redraw, or keep this hand.";
    if (mulligans.length) {
      p.buttons.push({
        id: "redraw",
        label: picks.length ? `Redraw ${picks.length} card${picks.length > 1 ? "s" : ""}` : "Redraw (tap cards first)",
        primary: picks.length > 0,
        disabled: !match,
        run: () => match && send(match),
      });
    }
    if (keep) p.buttons.push({ id: "keep", label: "Keep this hand", primary: picks.length === 0, run: () => send(keep) });
    cover([...mulligans, ...(keep ? [keep] : [])]);
  } else if (triggers.length) {
    planTrigger(inp, triggers, p);
    cover(triggers);
  } else if (orders.length) {
    p.prompt = "Several abilities start at once: choose the one that resolves first.";
    for (const o of orders) {
      const e = v.order?.entries[o.body.index];
      p.buttons.push({ id: `order-${o.body.index}`, label: describe(v, o), primary: o.body.index === 0, run: () => send(o) });
      if (e && card(e.source.printingId)?.ability) p.prompt += ` ${cardName(e.source.printingId)}: ${card(e.source.printingId)!.ability}`;
    }
    cover(orders);
  } else if (abilities.length) {
    const a = v.ability;
    const name = a ? cardName(a.source.printingId) : "An ability";
    const text = a ? card(a.source.printingId)?.ability ?? "" : "";
    p.prompt = `${name}: ${text} Use it?`;
    for (const i of abilities) {
      p.buttons.push(
        i.body.accept
          ? { id: "ability-yes", label: a ? `Use it (${costText(a.cost)})` : "Use it", primary: true, run: () => send(i) }
          : { id: "ability-no", label: "Don't use it", run: () => send(i) },
      );
    }
    cover(abilities);
  } else if (chooses.length && v.choice) {
    const ch = v.choice;
    p.prompt = choicePrompt(ch);
    for (const i of chooses) {
      const o = ch.options[i.body.index];
      if (!o) continue;
      if (ch.kind === 1) p.targets.set(`${ch.abilityKey === 6 ? "opp" : "me"}:${o.slot}`, () => send(i));
      p.buttons.push({ id: `choose-${i.body.index}`, label: optionText(ch, o, true, v), primary: i.body.index === 0 && ch.kind !== 1, run: () => send(i) });
    }
    if (ch.kind === 1) p.prompt += " Tap it on the board.";
    cover(chooses);
  } else {
    planPhase(inp, p, cover);
  }
  p.rest = playable.filter((i) => !covered.has(i));
  return p;
}

/** planTrigger: tap the unit that gets the power, then (a critical) the one that gets the critical, or pick the damage to heal. */
function planTrigger(inp: PlanInput, triggers: Of<"ResolveTrigger">[], p: Plan): void {
  const { view: v, send, select } = inp;
  const t = v.trigger;
  const kind = t ? TRIGGERS[t.trigger] ?? "" : "";
  const check = t ? (t.checkKind === 0 ? "drive check" : "damage check") : "check";
  const me = v.players[v.you]!;
  if (inp.sel.kind === "trigger" && triggers.some((i) => i.body.powerTarget === (inp.sel as { power: number }).power)) {
    const power = inp.sel.power;
    p.selected.add(`me:${power}`);
    const pairs = triggers.filter((i) => i.body.powerTarget === power);
    if (t?.trigger === 1) {
      p.prompt = `Critical trigger: +10000 power goes to your ${slotName(power)}. Now tap the unit that gets +1 critical.`;
      for (const i of pairs) p.targets.set(`me:${i.body.effectTarget}`, () => send(i));
    } else {
      p.prompt = `${kind} trigger: +10000 power goes to your ${slotName(power)}. Choose the damage card to heal.`;
      for (const i of pairs) {
        const e = i.body.effectTarget;
        const label = e >= 0 ? `Heal ${cardName(me.faceUpDamage[e]?.printingId ?? "")} (face up)` : e === -1 ? "Heal a face-down damage card" : "No heal";
        p.buttons.push({ id: `heal-${e}`, label, primary: e === pairs[0]!.body.effectTarget, run: () => send(i) });
      }
    }
    p.buttons.push({ id: "trigger-back", label: "Pick another unit", run: () => select(NONE) });
    return;
  }
  p.prompt = `${kind} trigger on your ${check}: ${TRIGGER_EFFECTS[t?.trigger ?? 0] ?? ""}. Tap the unit that gets +10000 power.`;
  const powers = [...new Set(triggers.map((i) => i.body.powerTarget))];
  for (const power of powers) {
    const pairs = triggers.filter((i) => i.body.powerTarget === power);
    p.targets.set(`me:${power}`, pairs.length === 1 ? () => send(pairs[0]!) : () => select({ kind: "trigger", power }));
  }
}

/** planPhase: ride, call, move, abilities, attack and guard by tapping cards and circles. */
function planPhase(inp: PlanInput, p: Plan, cover: (is: Intent[]) => void): void {
  const { view: v, legal, send, select } = inp;
  const me = v.players[v.you]!;
  const hand = me.hand;
  const rides = ofType(legal, "Ride");
  const calls = ofType(legal, "Call");
  const moves = ofType(legal, "Move");
  const attacks = ofType(legal, "Attack");
  const guards = ofType(legal, "Guard");
  const intercepts = ofType(legal, "Intercept");
  const acts = ofType(legal, "ActivateAbility");
  const unitAt = (slot: number) => (slot === -1 ? me.vanguard : me.rearGuards[slot] ?? null);
  const handUsable = (id: string) => rides.some((i) => i.body.printingId === id) || calls.some((i) => i.body.printingId === id) || guards.some((i) => i.body.printingId === id);
  const slots = [-1, 0, 1, 2, 3, 4];
  const unitUsable = (s: number) => {
    const u = unitAt(s);
    return (
      moves.some((i) => i.body.fromSlot === s) ||
      attacks.some((i) => i.body.attackerSlot === s) ||
      intercepts.some((i) => i.body.slot === s) ||
      (u != null && acts.some((i) => i.body.instanceId === u.instanceId))
    );
  };
  cover([...rides, ...calls, ...moves, ...attacks, ...guards, ...intercepts, ...acts]);

  // Anything selectable can be picked (or picked again to drop it).
  hand.forEach((c, i) => {
    if (handUsable(c.printingId)) p.targets.set(`hand:${i}`, () => select(inp.sel.kind === "hand" && inp.sel.index === i ? NONE : { kind: "hand", index: i }));
  });
  for (const s of slots) {
    if (unitUsable(s)) {
      const boost = attacks.some((i) => i.body.attackerSlot === s && i.body.boosterSlot != null);
      p.targets.set(`me:${s}`, () => select(inp.sel.kind === "unit" && inp.sel.slot === s ? NONE : { kind: "unit", slot: s, boost }));
    }
  }

  const sel = inp.sel;
  if (sel.kind === "hand" && hand[sel.index] && handUsable(hand[sel.index]!.printingId)) {
    const id = hand[sel.index]!.printingId;
    const name = cardName(id);
    p.selected.add(`hand:${sel.index}`);
    const ride = rides.find((i) => i.body.printingId === id);
    if (ride) p.targets.set("me:-1", () => send(ride));
    const myCalls = calls.filter((i) => i.body.printingId === id);
    for (const c of myCalls) p.targets.set(`me:${c.body.slot}`, () => send(c));
    const plain = guards.find((i) => i.body.printingId === id && i.body.discardPrintingId == null);
    const sentinel = guards.filter((i) => i.body.printingId === id && i.body.discardPrintingId != null);
    const parts: string[] = [];
    if (ride) parts.push(`tap your vanguard circle to ride ${name}`);
    if (myCalls.length) parts.push(`tap a highlighted circle to call ${name} there`);
    if (plain) {
      const shield = card(id)?.shield ?? 0;
      p.buttons.push({ id: "guard", label: `Guard with ${name} (+${shield} shield)`, primary: true, run: () => send(plain) });
      parts.push(`guard with ${name}`);
    }
    if (sentinel.length) {
      hand.forEach((c, j) => {
        const g = sentinel.find((i) => i.body.discardPrintingId === c.printingId);
        if (g && j !== sel.index) p.targets.set(`hand:${j}`, () => send(g));
      });
      parts.push(`tap the card to discard: ${name} then stops this attack from hitting (perfect guard)`);
    }
    p.prompt = `${name}: ${parts.join("; or ")}.`;
  } else if (sel.kind === "unit" && unitAt(sel.slot) && unitUsable(sel.slot)) {
    const u = unitAt(sel.slot)!;
    const name = cardName(u.printingId);
    p.selected.add(`me:${sel.slot}`);
    const parts: string[] = [];
    const myMoves = moves.filter((i) => i.body.fromSlot === sel.slot);
    for (const m of myMoves) p.targets.set(`me:${m.body.toSlot}`, () => send(m));
    if (myMoves.length) parts.push(`tap the circle to move it to`);
    const myAttacks = attacks.filter((i) => i.body.attackerSlot === sel.slot);
    if (myAttacks.length) {
      const boosted = myAttacks.filter((i) => i.body.boosterSlot != null);
      const wantBoost = sel.boost && boosted.length > 0;
      for (const a of myAttacks) {
        if ((a.body.boosterSlot != null) !== wantBoost) continue;
        p.targets.set(`opp:${a.body.targetSlot}`, () => send(a));
      }
      if (boosted.length && boosted.length < myAttacks.length) {
        const b = boosted[0]!.body.boosterSlot!;
        const booster = unitAt(b);
        p.buttons.push({
          id: "boost",
          label: wantBoost ? `Boost: on (${booster ? cardName(booster.printingId) : slotName(b)} +${booster?.power ?? 0})` : "Boost: off",
          run: () => select({ kind: "unit", slot: sel.slot, boost: !wantBoost }),
        });
      }
      parts.push(`tap one of their units to attack it (${u.power} power${wantBoost ? " with the boost" : ""})`);
    }
    const icpt = intercepts.find((i) => i.body.slot === sel.slot);
    if (icpt) {
      p.buttons.push({ id: "intercept", label: `Intercept with ${name} (+${card(u.printingId)?.shield ?? 0} shield)`, primary: true, run: () => send(icpt) });
      parts.push("intercept");
    }
    for (const a of acts.filter((i) => i.body.instanceId === u.instanceId)) {
      const d = a.body.discardPrintingId;
      p.buttons.push({
        id: `act-${d ?? "none"}`,
        label: d ? `Use ability: discard ${cardName(d)}` : "Use its ability",
        primary: true,
        run: () => send(a),
      });
    }
    // The catalog's sentence loses its full stop: the prompt ends with one.
    if (acts.some((i) => i.body.instanceId === u.instanceId)) parts.push(`use its ability — ${(card(u.printingId)?.ability ?? "").replace(/\.$/, "")}`);
    p.prompt = `${name}: ${parts.join("; or ")}.`;
  } else {
    p.prompt = phasePrompt(v, { rides: rides.length > 0, calls: calls.length > 0, attacks: attacks.length > 0, guards: guards.length + intercepts.length > 0 });
  }
  for (const [t, id, label, primary] of [
    ["SkipRide", "skip-ride", "Don't ride", false],
    ["EnterBattle", "battle", "Go to battle", !calls.length],
    ["EndTurn", "end-turn", "End turn", !attacks.length && !calls.length],
    ["PassGuard", "no-guard", "Don't guard", false],
  ] as const) {
    const i = legal.find((x) => x.type === t);
    if (i) {
      p.buttons.push({ id, label, primary, run: () => send(i) });
      cover([i]);
    }
  }
}

function phasePrompt(v: MatchView, can: { rides: boolean; calls: boolean; attacks: boolean; guards: boolean }): string {
  const me = v.players[v.you]!;
  const vg = me.vanguard ? card(me.vanguard.printingId)?.grade ?? 0 : 0;
  if (can.guards && v.battle) {
    const b = v.battle;
    const need = shieldNeeded(b.attackerPower, b.targetPower, b.shieldTotal);
    return (
      `You are attacked: ${b.attackerPower} power against your ${slotName(b.targetSlot)}'s ${b.targetPower}` +
      `${b.shieldTotal ? ` + ${b.shieldTotal} shield` : ""}. ` +
      (need ? `It hits unless you add ${need} shield: tap hand cards to guard, or don't guard.` : "It will not hit; you need not guard.")
    );
  }
  if (can.rides) return `Ride phase: tap a grade ${vg} or ${vg + 1} card in your hand, then your vanguard circle. Or don't ride.`;
  if (can.attacks) return "Battle: tap one of your standing front-row units, then the unit it attacks. Or end your turn.";
  if (can.calls) return "Main phase: tap a hand card, then a circle to call it; tap a unit to move it or use its ability. Then go to battle.";
  return "Your decision.";
}

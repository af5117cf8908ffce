// What the play page says to a player: card names and text from the
// catalog (/cards.json), and every intent, prompt, trigger and result in
// plain words. Nothing here talks to the server.
import type { AbilityView, ChoiceOption, ChoiceView, Intent, MatchView } from "../../clients/ts/src/index.js";

/** Card is a printing as /cards.json describes it (web/cards.go). */
export interface Card {
  name: string;
  clan: string;
  grade: number;
  power: number;
  shield: number;
  critical: number;
  trigger: number;
  sentinel?: boolean;
  skill: string;
  ability?: string;
}

let cards: Record<string, Card> = {};

/** setCatalog installs the catalog fetched from /cards.json. */
export function setCatalog(c: Record<string, Card>): void {
  cards = c;
}

/** card returns a printing's catalog entry, if the catalog has it. */
export function card(id: string): Card | undefined {
  return cards[id];
}

/** cardName is the printing's name, or its id when the catalog lacks it. */
export function cardName(id: string): string {
  return cards[id]?.name ?? id;
}

export const TRIGGERS = ["", "Critical", "Draw", "Front", "Heal"];
/** TRIGGER_EFFECTS says what each trigger does (docs/rules.md §6). */
export const TRIGGER_EFFECTS = [
  "",
  "+10000 power to one of your units and +1 critical to one (the same or another)",
  "+10000 power to one of your units, and you draw a card",
  "+10000 power to every unit in your front row",
  "+10000 power to one of your units, and heals 1 damage if you have at least as much damage as your opponent",
];
export const PHASES = ["Setup", "Stand", "Draw", "Ride", "Main", "Battle", "End", "Finished"];
export const STEPS = ["", "Start", "Attack", "Guard", "Drive", "Damage", "Close"];

/** Slot numbers of the protocol: -1 vanguard, 0..2 back row, 3..4 front row. */
export const SLOT_NAMES: Record<number, string> = {
  [-1]: "vanguard",
  0: "back left",
  1: "back centre",
  2: "back right",
  3: "front left",
  4: "front right",
};

export function slotName(n: number): string {
  return SLOT_NAMES[n] ?? `circle ${n}`;
}

/** cardText is everything a player may want to know about a printing, one line each. */
export function cardText(id: string): string[] {
  const c = cards[id];
  if (!c) return [id];
  const lines = [
    `${c.name} — grade ${c.grade} ${c.clan}`,
    `Power ${c.power} · shield ${c.shield || "none"} · critical ${c.critical}`,
  ];
  if (c.trigger) lines.push(`${TRIGGERS[c.trigger]} trigger: ${TRIGGER_EFFECTS[c.trigger]}.`);
  if (c.ability) lines.push(c.ability);
  lines.push(c.skill);
  return lines;
}

/** costText names an ability's cost ("counter blast 1", "discard a card"). */
export function costText(cost: AbilityView["cost"]): string {
  const parts: string[] = [];
  if (cost.counterBlast) parts.push(`counter blast ${cost.counterBlast} (turn ${cost.counterBlast} face-up damage face down)`);
  if (cost.soulBlast) parts.push(`soul blast ${cost.soulBlast} (${cost.soulBlast} soul card${cost.soulBlast > 1 ? "s" : ""} to the drop zone)`);
  if (cost.discard) parts.push("discard a card from your hand");
  return parts.length ? parts.join(", ") : "no cost";
}

/** modeText says what each mode of the A3 call ability does. */
const MODES = ["+5000 power to this unit this turn", "Soul charge 1 (top card of your deck into your soul)", "Counter charge 1 (a face-down damage card face up)"];

/** optionText describes one option of a Choice decision. */
export function optionText(ch: ChoiceView, o: ChoiceOption, mine: boolean, v: MatchView): string {
  switch (ch.kind) {
    case 0:
      return MODES[o.mode] ?? `Option ${o.mode + 1}`;
    case 2:
      return `Take ${cardName(o.printingId)} (grade ${card(o.printingId)?.grade ?? "?"})`;
    default: {
      // A6 retires an opponent's rear-guard; A8 powers up your own unit.
      const own = ch.abilityKey !== 6;
      const p = v.players[own === mine ? v.you : 1 - v.you]!;
      const unit = o.slot === -1 ? p.vanguard : p.rearGuards[o.slot];
      const who = own ? "your" : "their";
      return `${who} ${slotName(o.slot)}${unit ? ` (${cardName(unit.printingId)})` : ""}`;
    }
  }
}

/** choicePrompt says what a Choice decision is about. */
export function choicePrompt(ch: ChoiceView): string {
  const src = cardName(ch.source.printingId);
  switch (ch.kind) {
    case 0:
      return `${src}: choose one effect.`;
    case 2:
      return `${src}: choose the card to take from your deck.`;
    default:
      return ch.abilityKey === 6 ? `${src}: choose one of their rear-guards to retire.` : `${src}: choose the unit that gets the power.`;
  }
}

/** describe names an intent as a button would (the fallback list of every legal move). */
export function describe(v: MatchView, i: Intent): string {
  const b = i.body as Record<string, unknown>;
  const slot = (n: unknown) => slotName(n as number);
  switch (i.type) {
    case "Mulligan":
      return `Redraw ${(b.handIndexes as number[]).map((x) => cardName(v.players[v.you]!.hand[x]?.printingId ?? "")).join(", ")}`;
    case "FinishMulligan":
      return "Keep this hand";
    case "Ride":
      return `Ride ${cardName(b.printingId as string)}`;
    case "SkipRide":
      return "Don't ride";
    case "Call":
      return `Call ${cardName(b.printingId as string)} to ${slot(b.slot)}`;
    case "Move":
      return `Move ${slot(b.fromSlot)} → ${slot(b.toSlot)}`;
    case "EnterBattle":
      return "Go to battle";
    case "Attack":
      return `Attack with your ${slot(b.attackerSlot)} → their ${slot(b.targetSlot)}${b.boosterSlot != null ? ` (boost from ${slot(b.boosterSlot)})` : ""}`;
    case "Guard":
      return `Guard with ${cardName(b.printingId as string)}${b.discardPrintingId ? ` (discard ${cardName(b.discardPrintingId as string)})` : ""}`;
    case "Intercept":
      return `Intercept with your ${slot(b.slot)}`;
    case "PassGuard":
      return "Don't guard";
    case "ResolveTrigger":
      return `Power to your ${slot(b.powerTarget)}${(b.effectTarget as number) >= -1 ? `, effect on ${(b.effectTarget as number) >= 0 ? `damage card ${(b.effectTarget as number) + 1}` : "a face-down damage card"}` : ""}`;
    case "SelectTrigger": {
      const e = v.order?.entries[b.index as number];
      return e ? `Resolve ${cardName(e.source.printingId)}'s ability first` : `Resolve ability ${(b.index as number) + 1} first`;
    }
    case "ResolveAbility":
      return b.accept ? "Use the ability" : "Don't use it";
    case "Choose": {
      const ch = v.choice;
      const o = ch?.options[b.index as number];
      return ch && o ? optionText(ch, o, true, v) : `Option ${(b.index as number) + 1}`;
    }
    case "ActivateAbility":
      return `Use an ability${b.discardPrintingId ? ` (discard ${cardName(b.discardPrintingId as string)})` : ""}`;
    case "EndTurn":
      return "End turn";
    case "Concede":
      return "Concede";
  }
  return i.type;
}

/** FINISH_REASONS are the GameFinished reasons (docs/protocol.md enums). */
const FINISH_REASONS = ["damage", "deck out", "concession", "time", "absence", "draw"];

/** finishText explains the result to the seat `me`; reason is null when the page never saw GameFinished. */
export function finishText(v: MatchView, me: number, reason: number | null): { title: string; cls: string; why: string } {
  const opp = v.players[1 - me]!;
  const you = v.players[me]!;
  const won = v.winner === me;
  const title = v.winner === -1 ? "Draw" : won ? "You win!" : "You lose";
  const cls = v.winner === -1 ? "draw" : won ? "win" : "lose";
  const damage = (p: typeof you) => p.faceDownDamage + p.faceUpDamage.length;
  const r = reason ?? (damage(won ? opp : you) >= 6 ? 0 : -1);
  let why: string;
  switch (r) {
    case 0:
      why = won ? `${opp.name} took the sixth damage.` : "You took the sixth damage.";
      break;
    case 1:
      why = won ? `${opp.name} had no cards left to draw.` : "Your deck ran out.";
      break;
    case 2:
      why = won ? `${opp.name} conceded.` : "You conceded.";
      break;
    case 3:
      why = won ? `${opp.name} ran out of time.` : "You ran out of time: the decision clock and the bank are used up.";
      break;
    case 4:
      why = v.winner === -1 ? "Both players were away too long." : won ? `${opp.name} was away too long.` : "You were away too long.";
      break;
    case 5:
      why = "Neither player could win.";
      break;
    default:
      why = `The match is over${reason != null ? ` (${FINISH_REASONS[reason] ?? reason})` : ""}.`;
  }
  return { title, cls, why };
}

// The board of one seat: both players' circles, hands and piles, and the
// battle line. Every card carries data-card (its printing, for the card
// text) and, where the plan offers a tap, data-key (what the tap means);
// the page handles all taps in one listener.
import type { CardView, MatchView, PlayerView } from "../../clients/ts/src/index.js";
import { el } from "./dom.js";
import type { Plan } from "./interact.js";
import { shieldNeeded } from "./interact.js";
import { card, cardName, slotName, TRIGGERS } from "./text.js";

/** marks adds the plan's target and selection classes to a keyed element. */
function marks(e: HTMLElement, key: string, plan: Plan | null): HTMLElement {
  e.dataset.key = key;
  if (plan?.targets.has(key)) {
    e.classList.add("target");
    // Reachable from the keyboard too: Enter or Space taps it (play.ts).
    e.tabIndex = 0;
    e.setAttribute("role", "button");
  }
  if (plan?.selected.has(key)) e.classList.add("selected");
  return e;
}

function cardEl(c: CardView | null, where: string, key: string, plan: Plan | null): HTMLElement {
  if (!c) return marks(el("div", { class: "card empty" }, el("span", { class: "slot" }, where)), key, plan);
  if (!c.faceUp) return marks(el("div", { class: "card back", title: `${where}: face down` }, el("span", { class: "slot" }, "face down")), key, plan);
  const info = card(c.printingId);
  const boosted = c.power !== (info?.power ?? c.power);
  return marks(
    el(
      "div",
      {
        class: `card${c.rested ? " rested" : ""}${where === "vanguard" ? " vc" : ""}`,
        "data-card": c.printingId,
        title: `${cardName(c.printingId)} — ${where}${c.rested ? ", rested" : ""}`,
      },
      el("span", { class: "top" }, el("span", { class: "grade" }, info ? `G${info.grade}` : "?"), info?.trigger ? el("span", { class: `trig t${info.trigger}` }, TRIGGERS[info.trigger] ?? "") : null),
      el("span", { class: "name" }, cardName(c.printingId)),
      el(
        "span",
        { class: "stats" },
        el("span", { class: `power${boosted ? " up" : ""}` }, `${c.power}`),
        c.critical > 1 ? el("span", { class: "crit" }, `★${c.critical}`) : null,
        where === "hand" && info ? el("span", { class: "shield" }, info.shield ? `shield ${info.shield / 1000}k` : "no shield") : null,
        c.rested ? el("span", { class: "rest" }, "rested") : null,
      ),
    ),
    key,
    plan,
  );
}

function chips(cs: CardView[]): HTMLElement[] {
  return cs.map((c) => el("span", { class: "mini", "data-card": c.printingId }, cardName(c.printingId)));
}

/** pile is a compact zone: its name and count, and its cards as chips when shown. */
function pile(label: string, count: number, cls: string, cards: HTMLElement[] = [], of = ""): HTMLElement {
  return el("details", { class: `pile ${cls}` }, el("summary", {}, `${label} ${count}${of}`), cards.length ? el("div", { class: "chips" }, ...cards) : el("div", { class: "chips dim" }, "empty"));
}

/** renderPlayer draws one side; mine adds the hand. */
export function renderPlayer(v: MatchView, p: PlayerView, mine: boolean, plan: Plan | null): HTMLElement {
  const side = mine ? "me" : "opp";
  const rg = p.rearGuards;
  const at = (slot: number, c: CardView | null) => cardEl(c, slotName(slot), `${side}:${slot}`, mine || plan ? plan : null);
  const circles = el(
    "div",
    { class: "circles" },
    el("div", { class: "row front" }, at(3, rg[3] ?? null), at(-1, p.vanguard), at(4, rg[4] ?? null)),
    el("div", { class: "row back" }, at(0, rg[0] ?? null), at(1, rg[1] ?? null), at(2, rg[2] ?? null)),
  );
  const damage = p.faceDownDamage + p.faceUpDamage.length;
  const dmgCards = [...chips(p.faceUpDamage), ...Array.from({ length: p.faceDownDamage }, () => el("span", { class: "mini down" }, "face down"))];
  const piles = el(
    "div",
    { class: "piles" },
    pile("Damage", damage, `damage${damage >= 5 ? " danger" : ""}`, dmgCards, "/6"),
    pile("Soul", p.soul.length, "soul", chips(p.soul)),
    pile("Drop", p.drop.length, "drop", chips(p.drop)),
    el("span", { class: "count" }, `Deck ${p.deckCount}`),
    mine ? null : el("span", { class: "count" }, `Hand ${p.handCount}`),
    p.trigger ? el("span", { class: "count trigger-zone" }, "Checking: ", el("span", { class: "mini", "data-card": p.trigger.printingId }, cardName(p.trigger.printingId))) : null,
    p.guardian.length ? el("span", { class: "count" }, "Guardians: ", ...chips(p.guardian)) : null,
  );
  const hand = mine
    ? el(
        "div",
        { class: "hand", id: "my-hand" },
        el("div", { class: "label" }, `Your hand (${p.handCount})`),
        el("div", { class: "cards" }, ...p.hand.map((c, i) => cardEl(c, "hand", `hand:${i}`, plan))),
      )
    : el("div", { class: "hand theirs", id: "opp-hand" }, ...Array.from({ length: p.handCount }, () => el("span", { class: "card-back-mini" })));
  const who = v.isFinished && v.winner === p.index ? " — winner" : p.isDefeated ? " — defeated" : "";
  return el(
    "section",
    { class: `player ${mine ? "mine" : "theirs"}` },
    el("h2", {}, el("span", { class: "pname" }, `${p.name}${mine ? " (you)" : ""}`), who),
    piles,
    circles,
    hand,
  );
}

/**
 * attackerOf is who attacks in the open battle: from the Attack event when
 * the page saw it, else worked out from the view (a reload mid-battle): the
 * defender guards, a drive check is the attacker's and a damage check the
 * defender's; abilities during a battle belong to the attacker.
 */
export function attackerOf(v: MatchView, seen: number): number {
  if (seen === 0 || seen === 1) return seen;
  if (v.step === 3) return 1 - v.activePlayer; // guard step: the defender decides
  if (v.trigger) return v.trigger.checkKind === 0 ? v.trigger.player : 1 - v.trigger.player;
  return v.activePlayer;
}

/** renderBattle is the battle line: who attacks what, the numbers, the shield needed, drive and triggers. */
export function renderBattle(v: MatchView, attacker: number): HTMLElement[] {
  const out: HTMLElement[] = [];
  const b = v.battle;
  // A seat's own units are "your"; every other unit is named by its player,
  // so a spectator (seat 2) or a replay reads names on both sides.
  const whose = (seat: number) => (seat === v.you ? "your" : `${v.players[seat]!.name}'s`);
  const name = (seat: number) => (seat === v.you ? "Your" : whose(seat));
  if (b) {
    const att = v.players[attacker]!;
    const def = v.players[1 - attacker]!;
    const unit = b.attackerSlot === -1 ? att.vanguard : att.rearGuards[b.attackerSlot];
    const target = b.targetSlot === -1 ? def.vanguard : def.rearGuards[b.targetSlot];
    const need = shieldNeeded(b.attackerPower, b.targetPower, b.shieldTotal);
    const result = b.hit == null ? (b.perfectGuard ? "perfect guard: it cannot hit" : need ? `hits unless ${need} more shield` : "will not hit") : b.hit ? "HIT" : "no hit";
    out.push(
      el(
        "div",
        { class: "battle-box", id: "battle-box", "data-attacker": String(attacker) },
        el("b", {}, `${name(attacker)} ${slotName(b.attackerSlot)}`),
        unit ? ` (${cardName(unit.printingId)})` : "",
        b.boosterSlot != null ? `, boosted by the ${slotName(b.boosterSlot)},` : "",
        ` attacks ${whose(1 - attacker)} ${slotName(b.targetSlot)}${target ? ` (${cardName(target.printingId)})` : ""}: `,
        el("b", {}, `${b.attackerPower}`),
        ` vs ${b.targetPower}${b.shieldTotal ? ` + ${b.shieldTotal} shield` : ""} — ${result}`,
        b.driveTotal ? `; drive check ${b.driveDone}/${b.driveTotal}` : "",
      ),
    );
  }
  const t = v.trigger;
  if (t) {
    out.push(
      el(
        "div",
        { class: "trigger-box" },
        el("b", {}, `${name(t.player)} ${t.checkKind === 0 ? "drive" : "damage"} check: `),
        el("span", { class: "mini", "data-card": t.card.printingId }, cardName(t.card.printingId)),
        t.trigger ? ` — ${TRIGGERS[t.trigger]} trigger` : " — no trigger",
      ),
    );
  }
  if (v.opponentChoosing) out.push(el("div", { class: "choice-box" }, `${v.players[1 - v.you]!.name} is choosing how to use an ability…`));
  return out;
}

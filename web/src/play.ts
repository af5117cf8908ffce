// The play page: a lobby that creates a match against the server's bot or
// for a friend (POST /api/play/matches), and a board for one seat, joined
// through its link (#m=<match>&s=<seat>&k=<seat key>). The page renders only
// what the protocol sends to its seat; the seat key stays in the URL
// fragment, which browsers never send to a server.
// The library is served next to the page (web.Handler serves clients/ts's
// browser build at /matchgrain-client.js), not inlined: it stays the one
// the library's own tests checked.
import { Session, makeIntent } from "/matchgrain-client.js";
import type {
  CardView,
  ClockView,
  Intent,
  MatchView,
  PlayerView,
  ServerFrame,
  SessionState,
  WireEntry,
} from "../../clients/ts/src/index.js";

interface Card {
  name: string;
  grade: number;
  power: number;
  shield: number;
  trigger: number;
  sentinel?: boolean;
}
interface Deck {
  id: string;
  name: string;
  cards: number;
}
interface SeatLink {
  matchId: string;
  seat: number;
  key: string;
}

const $ = <T extends HTMLElement = HTMLElement>(sel: string): T => {
  const e = document.querySelector<T>(sel);
  if (!e) throw new Error(`page: missing ${sel}`);
  return e;
};

function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Record<string, string> = {},
  ...children: (Node | string | null | undefined)[]
): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "class") e.className = v;
    else e.setAttribute(k, v);
  }
  for (const c of children) if (c != null) e.append(c);
  return e;
}

let cards: Record<string, Card> = {};
const TRIGGERS = ["", "Critical", "Draw", "Front", "Heal"];
const PHASES = ["Setup", "Stand", "Draw", "Ride", "Main", "Battle", "End", "Finished"];
const STEPS = ["", "Start", "Attack", "Guard", "Drive", "Damage", "Close"];
// Slot numbers of the protocol: -1 vanguard, 0..2 back row, 3..4 front row.
const SLOT_NAMES: Record<number, string> = {
  [-1]: "vanguard",
  0: "back left",
  1: "back centre",
  2: "back right",
  3: "front left",
  4: "front right",
};

function cardName(id: string): string {
  return cards[id]?.name ?? id;
}

async function api<T>(path: string, body?: unknown): Promise<T> {
  const res = await fetch(path, {
    method: body === undefined ? "GET" : "POST",
    headers: body === undefined ? {} : { "Content-Type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const data = (await res.json().catch(() => ({}))) as { message?: string };
  if (!res.ok) throw new Error(data.message ?? `HTTP ${res.status}`);
  return data as T;
}

function parseLink(): SeatLink | null {
  const p = new URLSearchParams(location.hash.slice(1));
  const matchId = p.get("m");
  const seat = Number(p.get("s"));
  const key = p.get("k");
  if (!matchId || !key || (seat !== 0 && seat !== 1)) return null;
  return { matchId, seat, key };
}

// redeemInvite turns a friend's invite link (#m=…&i=…) into a seat link:
// the invite is single use, and the seat key it yields derives from a claim
// drawn here, which the creator never sees. The claim is kept for this tab,
// so a reload retries with the same claim and gets the same key.
async function redeemInvite(): Promise<SeatLink | null> {
  const p = new URLSearchParams(location.hash.slice(1));
  const matchId = p.get("m");
  const invite = p.get("i");
  if (!matchId || !invite) return null;
  let claim = sessionStorage.getItem(`claim:${matchId}`);
  if (!claim) {
    const b = crypto.getRandomValues(new Uint8Array(16));
    claim = btoa(String.fromCharCode(...b)).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
    sessionStorage.setItem(`claim:${matchId}`, claim);
  }
  try {
    const r = await api<{ seatKey: string }>("/api/play/invites", { matchId, invite, claim });
    const link = { matchId, seat: 1, key: r.seatKey };
    history.replaceState(null, "", `#${new URLSearchParams({ m: matchId, s: "1", k: r.seatKey })}`);
    return link;
  } catch (e) {
    $("#lobby-error").textContent = `Could not join the match: ${(e as Error).message}`;
    return null;
  }
}

// ---- lobby ----

async function lobby(): Promise<void> {
  $("#lobby").hidden = false;
  $("#game").hidden = true;
  const decks = (await api<{ decks: Deck[] }>("/api/play/decks")).decks;
  const sel = $<HTMLSelectElement>("#deck");
  sel.replaceChildren(...decks.map((d) => el("option", { value: d.id }, `${d.name} (${d.id})`)));
  const start = async (opponent: "bot" | "friend") => {
    const name = $<HTMLInputElement>("#name").value.trim() || "Player";
    $("#lobby-error").textContent = "";
    try {
      const r = await api<{ matchId: string; seatKey: string; invite?: string }>("/api/play/matches", {
        name,
        deck: sel.value,
        opponent,
      });
      if (r.invite) sessionStorage.setItem(`friend:${r.matchId}`, r.invite);
      location.hash = new URLSearchParams({ m: r.matchId, s: "0", k: r.seatKey }).toString();
    } catch (e) {
      $("#lobby-error").textContent = `Could not create the match: ${(e as Error).message}`;
    }
  };
  $("#play-bot").onclick = () => void start("bot");
  $("#play-friend").onclick = () => void start("friend");
}

// ---- game ----

interface GameState {
  link: SeatLink;
  session: Session | null;
  view: MatchView | null;
  clock: ClockView | null;
  clockSeq: number;
  offsetMs: number;
  resyncing: boolean;
  pendingIntent: boolean;
  log: WireEntry[];
  conn: SessionState;
  error: string;
  /** snapshots counts the snapshots rendered (tests wait on it). */
  snapshots: number;
  /** turnPlayer is whose turn it is, from TurnStarted events (-1: not seen yet). */
  turnPlayer: number;
}

const MAX_LOG = 300;

function game(link: SeatLink): void {
  $("#lobby").hidden = true;
  $("#game").hidden = false;
  const st: GameState = {
    link,
    session: null,
    view: null,
    clock: null,
    clockSeq: 0,
    offsetMs: 0,
    resyncing: false,
    pendingIntent: false,
    log: [],
    conn: "connecting",
    error: "",
    snapshots: 0,
    turnPlayer: -1,
  };
  (window as unknown as { matchgrain: GameState }).matchgrain = st; // for tests and curious players

  const invite = link.seat === 0 ? sessionStorage.getItem(`friend:${link.matchId}`) : null;
  if (invite) {
    const url = `${location.origin}${location.pathname}#${new URLSearchParams({ m: link.matchId, i: invite })}`;
    $("#friend-link").hidden = false;
    $<HTMLInputElement>("#friend-url").value = url;
    $("#copy-friend").onclick = () => void navigator.clipboard?.writeText(url);
  }
  $("#toggle-log").onclick = () => {
    const box = $("#log");
    box.hidden = !box.hidden;
    renderLog(st);
  };
  $("#new-match").onclick = () => {
    void st.session?.leave("new match");
    location.hash = "";
  };

  const proto = location.protocol === "https:" ? "wss:" : "ws:";
  const url = `${proto}//${location.host}/game`;
  // The answer carries the seat key signed with the current ticket key:
  // keeping it keeps the seat across a ticket-key rotation.
  const ticket = async () => {
    const r = await api<{ ticket: string; seatKey?: string }>("/api/play/tickets", { matchId: link.matchId, seat: link.seat, seatKey: link.key });
    if (r.seatKey && r.seatKey !== link.key) {
      link.key = r.seatKey;
      history.replaceState(null, "", `#${new URLSearchParams({ m: link.matchId, s: String(link.seat), k: link.key })}`);
    }
    return r.ticket;
  };

  const onFrame = (f: ServerFrame) => handleFrame(st, f);
  Session.start(
    {
      url,
      ticket,
      clientBuild: "matchgrain-web",
      maxAttempts: -1,
      backoffMs: [0, 500, 2_000, 5_000],
      onWire: (e) => {
        st.log.push(e);
        if (st.log.length > MAX_LOG) st.log.splice(0, st.log.length - MAX_LOG);
        if (!$("#log").hidden) renderLog(st);
      },
    },
    onFrame,
  )
    .then((s) => {
      st.session = s;
      st.conn = s.state;
      s.onState((state) => {
        st.conn = state;
        if (state === "open") st.resyncing = false;
        renderStatus(st);
      });
      renderStatus(st);
      void s.done.then((err) => {
        st.error = err ? err.message : "";
        st.conn = "closed";
        renderStatus(st);
      });
    })
    .catch((e: Error) => {
      st.error = e.message;
      st.conn = "closed";
      renderStatus(st);
    });
  setInterval(() => renderClocks(st), 250);
}

function handleFrame(st: GameState, f: ServerFrame): void {
  switch (f.type) {
    case "ServerHello":
      st.offsetMs = f.body.serverTimeMs - Date.now();
      break;
    case "ServerSnapshot":
      st.view = f.body.view;
      st.clock = f.body.view.clock;
      st.clockSeq = f.body.view.eventSeq;
      st.resyncing = false;
      st.snapshots++;
      render(st);
      return;
    case "ServerEvents":
      for (const e of f.body.events) if (e.event.type === "TurnStarted") st.turnPlayer = e.event.body.player;
      // legalIntents come only with snapshots: after anything happened,
      // ask for a fresh one.
      if (f.body.toSeq > (st.view?.eventSeq ?? 0)) askSnapshot(st);
      break;
    case "ServerIntentResult":
      st.pendingIntent = false;
      if (!f.body.accepted) st.error = `Refused: ${f.body.reason}`;
      askSnapshot(st);
      break;
    case "ServerClock":
      st.clock = f.body.clock;
      st.clockSeq = f.body.eventSeq;
      if (st.view && f.body.eventSeq > st.view.eventSeq) askSnapshot(st);
      renderStatus(st);
      break;
    case "ServerError":
      st.error = `${f.body.message}`;
      renderStatus(st);
      break;
  }
}

function askSnapshot(st: GameState): void {
  if (st.resyncing || !st.session || st.session.state !== "open") return;
  st.resyncing = true;
  try {
    st.session.resync(true);
  } catch {
    st.resyncing = false; // reconnecting: the next hello brings a snapshot
  }
}

function send(st: GameState, intent: Intent): void {
  if (!st.session || st.pendingIntent) return;
  st.error = "";
  st.pendingIntent = true;
  st.session.sendIntent(intent);
  renderActions(st);
}

// ---- rendering ----

function render(st: GameState): void {
  const v = st.view;
  if (!v) return;
  const me = st.link.seat;
  const opp = 1 - me;
  $("#opp").replaceChildren(renderPlayer(v, v.players[opp]!, false));
  $("#me").replaceChildren(renderPlayer(v, v.players[me]!, true));
  $("#battle").replaceChildren(...renderBattle(v, st.turnPlayer));
  renderStatus(st);
  renderActions(st);
  renderClocks(st);
}

function cardEl(c: CardView | null, where: string): HTMLElement {
  if (!c) return el("div", { class: "card empty", title: where }, el("span", { class: "slot" }, where));
  const info = cards[c.printingId];
  const trig = info && info.trigger ? el("span", { class: `trig t${info.trigger}` }, TRIGGERS[info.trigger] ?? "") : null;
  return el(
    "div",
    {
      class: `card${c.rested ? " rested" : ""}${where === "vanguard" ? " vc" : ""}`,
      "data-printing": c.printingId,
      title: `${cardName(c.printingId)} (${c.printingId})${c.rested ? ", rested" : ""}`,
    },
    el("span", { class: "name" }, cardName(c.printingId)),
    el("span", { class: "grade" }, info ? `G${info.grade}` : ""),
    trig,
    el("span", { class: "power" }, `${c.power}${c.critical > 1 ? ` ★${c.critical}` : ""}`),
  );
}

function pile(label: string, cs: CardView[], cls: string): HTMLElement {
  return el(
    "div",
    { class: `pile ${cls}` },
    el("div", { class: "label" }, `${label} (${cs.length})`),
    el("div", { class: "cards" }, ...cs.map((c) => el("span", { class: "mini", title: c.printingId }, cardName(c.printingId)))),
  );
}

function renderPlayer(v: MatchView, p: PlayerView, mine: boolean): HTMLElement {
  const rg = p.rearGuards;
  const circles = el(
    "div",
    { class: "circles" },
    el("div", { class: "row front" }, cardEl(rg[3] ?? null, "front left"), cardEl(p.vanguard, "vanguard"), cardEl(rg[4] ?? null, "front right")),
    el("div", { class: "row back" }, cardEl(rg[0] ?? null, "back left"), cardEl(rg[1] ?? null, "back centre"), cardEl(rg[2] ?? null, "back right")),
  );
  const damage = el(
    "div",
    { class: "pile damage" },
    el("div", { class: "label" }, `Damage ${p.faceDownDamage + p.faceUpDamage.length} / 6`),
    el(
      "div",
      { class: "cards" },
      ...p.faceUpDamage.map((c) => el("span", { class: "mini", title: c.printingId }, cardName(c.printingId))),
      ...Array.from({ length: p.faceDownDamage }, () => el("span", { class: "mini down" }, "face down")),
    ),
  );
  const hand = mine
    ? el(
        "div",
        { class: "hand", id: "my-hand" },
        el("div", { class: "label" }, `Hand (${p.handCount})`),
        el("div", { class: "cards" }, ...p.hand.map((c) => cardEl(c, "hand"))),
      )
    : el(
        "div",
        { class: "hand", id: "opp-hand" },
        el("div", { class: "label" }, `Hand (${p.handCount})`),
        el("div", { class: "cards" }, ...Array.from({ length: p.handCount }, () => el("div", { class: "card back" }))),
      );
  const side = el(
    "div",
    { class: "side" },
    el("div", { class: "pile deck" }, el("div", { class: "label" }, `Deck (${p.deckCount})`)),
    damage,
    pile("Soul", p.soul, "soul"),
    pile("Drop", p.drop, "drop"),
    el("div", { class: "pile trigger" }, el("div", { class: "label" }, "Trigger zone"), p.trigger ? cardEl(p.trigger, "trigger") : null),
    p.guardian.length ? pile("Guardians", p.guardian, "guardians") : null,
  );
  const who = v.winner === p.index && v.isFinished ? " — winner" : p.isDefeated ? " — defeated" : "";
  return el(
    "section",
    { class: `player ${mine ? "mine" : "theirs"}` },
    el("h2", {}, `${p.name}${mine ? " (you)" : ""}${who}`),
    el("div", { class: "field" }, circles, side),
    hand,
  );
}

function renderBattle(v: MatchView, turnPlayer: number): HTMLElement[] {
  const out: HTMLElement[] = [];
  const b = v.battle;
  if (b) {
    // The turn player attacks; before any TurnStarted was seen (a reload
    // mid-battle), the guard step's decider is the defender.
    const att = turnPlayer >= 0 ? turnPlayer : 1 - v.activePlayer;
    const hit = b.hit == null ? "undecided" : b.hit ? "HIT" : "no hit";
    out.push(
      el(
        "div",
        { class: "battle-box", id: "battle-box" },
        el("b", {}, "Battle: "),
        `${v.players[att]!.name}'s ${SLOT_NAMES[b.attackerSlot]}${b.boosterSlot != null ? ` (boosted by ${SLOT_NAMES[b.boosterSlot]})` : ""} ` +
          `attacks ${SLOT_NAMES[b.targetSlot]} — ${b.attackerPower} vs ${b.targetPower} + shield ${b.shieldTotal}` +
          `${b.perfectGuard ? " (perfect guard)" : ""}; drive ${b.driveDone}/${b.driveTotal}; ${hit}`,
      ),
    );
  }
  const t = v.trigger;
  if (t) {
    out.push(
      el(
        "div",
        { class: "trigger-box" },
        el("b", {}, `${t.checkKind === 0 ? "Drive" : "Damage"} check: `),
        `${cardName(t.card.printingId)} — ${TRIGGERS[t.trigger] || "no"} trigger for ${v.players[t.player]!.name}`,
      ),
    );
  }
  if (v.ability) out.push(el("div", { class: "ability-box" }, el("b", {}, "Ability: "), `${cardName(v.ability.source.printingId)} asks to pay its cost`));
  if (v.choice) out.push(el("div", { class: "choice-box" }, el("b", {}, "Choice: "), `${cardName(v.choice.source.printingId)} — pick an option`));
  if (v.order) out.push(el("div", { class: "order-box" }, el("b", {}, "Order: "), `${v.order.entries.length} abilities to order`));
  return out;
}

function describe(v: MatchView, i: Intent): string {
  const b = i.body as Record<string, unknown>;
  const slot = (n: unknown) => SLOT_NAMES[n as number] ?? String(n);
  switch (i.type) {
    case "Mulligan":
      return `Redraw hand cards ${(b.handIndexes as number[]).map((x) => x + 1).join(", ")}`;
    case "FinishMulligan":
      return "Keep this hand";
    case "Ride":
      return `Ride ${cardName(b.printingId as string)}`;
    case "SkipRide":
      return "Do not ride";
    case "Call":
      return `Call ${cardName(b.printingId as string)} to ${slot(b.slot)}`;
    case "Move":
      return `Move ${slot(b.fromSlot)} → ${slot(b.toSlot)}`;
    case "EnterBattle":
      return "Go to battle";
    case "Attack":
      return `Attack with ${slot(b.attackerSlot)} → their ${slot(b.targetSlot)}${b.boosterSlot != null ? ` (boost ${slot(b.boosterSlot)})` : ""}`;
    case "Guard":
      return `Guard with ${cardName(b.printingId as string)}${b.discardPrintingId ? ` (discard ${cardName(b.discardPrintingId as string)})` : ""}`;
    case "Intercept":
      return `Intercept with ${slot(b.slot)}`;
    case "PassGuard":
      return "No guard";
    case "ResolveTrigger":
      return `Trigger: power to ${slot(b.powerTarget)}${(b.effectTarget as number) >= -1 ? `, effect on ${slot(b.effectTarget)}` : ""}`;
    case "SelectTrigger":
      return `Resolve ability #${(b.index as number) + 1} first`;
    case "ResolveAbility":
      return b.accept ? "Use the ability" : "Decline the ability";
    case "Choose": {
      const o = v.choice?.options[b.index as number];
      return o ? `Choose ${o.printingId ? cardName(o.printingId) : o.slot !== undefined && SLOT_NAMES[o.slot] ? slot(o.slot) : `option ${(b.index as number) + 1}`}` : `Choose option ${(b.index as number) + 1}`;
    }
    case "ActivateAbility":
      return `Activate ability of card #${b.instanceId}${b.discardPrintingId ? ` (discard ${cardName(b.discardPrintingId as string)})` : ""}`;
    case "EndTurn":
      return "End turn";
    case "Concede":
      return "Concede";
  }
  return i.type;
}

function renderActions(st: GameState): void {
  const v = st.view;
  const box = $("#actions");
  if (!v || v.isFinished) {
    box.replaceChildren();
    return;
  }
  const mine = v.legalIntents.filter((i) => i.type !== "Concede" && i.type !== "Unknown");
  const buttons = mine.map((i, n) => {
    const b = el("button", { "data-intent": i.type, "data-n": String(n) }, describe(v, i));
    b.onclick = () => send(st, i);
    (b as HTMLButtonElement).disabled = st.pendingIntent;
    return b;
  });
  const concede = el("button", { class: "concede", "data-intent": "Concede" }, "Concede");
  concede.onclick = () => {
    if (confirm("Concede this match?")) send(st, makeIntent("Concede", {}));
  };
  box.replaceChildren(...buttons, concede);
}

function renderStatus(st: GameState): void {
  const v = st.view;
  const me = st.link.seat;
  $("#conn").textContent = st.conn;
  $("#conn").className = `conn ${st.conn}`;
  $("#error").textContent = st.error;
  if (!v) return;
  $("#match-id").textContent = v.matchId;
  $("#turn").textContent = `Turn ${v.turnNumber} · ${PHASES[v.phase] ?? v.phase}${v.step ? ` · ${STEPS[v.step] ?? v.step}` : ""}`;
  const decision = $("#decision");
  if (v.isFinished) {
    const res = v.winner === me ? "You win!" : v.winner === 1 - me ? "You lose." : "Draw.";
    decision.textContent = `Match over — ${res}`;
    decision.className = "decision over";
    decision.dataset.state = "finished";
    $("#result").textContent = res;
    return;
  }
  const decider = st.clock?.decisionPlayer ?? -1;
  if (decider === me && v.legalIntents.some((i) => i.type !== "Concede")) {
    decision.textContent = "Your decision";
    decision.className = "decision mine";
    decision.dataset.state = "mine";
  } else if (decider === me) {
    decision.textContent = "Your decision (updating…)";
    decision.className = "decision mine";
    decision.dataset.state = "updating";
  } else {
    decision.textContent = `${v.players[1 - me]!.name} is deciding…`;
    decision.className = "decision theirs";
    decision.dataset.state = "theirs";
  }
}

function fmt(ms: number): string {
  const s = Math.max(0, Math.ceil(ms / 1000));
  return `${Math.floor(s / 60)}:${String(s % 60).padStart(2, "0")}`;
}

function renderClocks(st: GameState): void {
  const c = st.clock;
  const v = st.view;
  if (!c || !v) return;
  const now = Date.now() + st.offsetMs;
  for (const seat of [0, 1]) {
    let bank = seat === 0 ? c.bank0Ms : c.bank1Ms;
    let turn = "";
    if (c.isRunning && c.decisionPlayer === seat) {
      const free = c.turnDeadlineMs - now;
      if (free >= 0) turn = `decision ${fmt(free)}`;
      else {
        bank = Math.max(0, bank - Math.max(0, now - Math.max(c.turnDeadlineMs, c.serverTimeMs)));
        turn = "using bank";
      }
    }
    const who = seat === st.link.seat ? "you" : v.players[seat]!.name;
    const e = $(`#clock${seat}`);
    e.textContent = `${who}: ${turn ? `${turn} · ` : ""}bank ${fmt(bank)}`;
    e.className = `clock${c.isRunning && c.decisionPlayer === seat ? " running" : ""}`;
  }
}

function renderLog(st: GameState): void {
  const box = $("#log");
  if (box.hidden) return;
  const lines = st.log.slice(-150).map((e) => {
    const t = new Date(e.at).toISOString().slice(11, 23);
    const body = JSON.stringify(e.frame, (_k, val: unknown) => (typeof val === "bigint" ? val.toString() : val));
    return el("div", { class: `wire ${e.dir}` }, `${t} ${e.dir === "in" ? "⇐" : "⇒"} ${body}`);
  });
  box.replaceChildren(...lines);
  box.scrollTop = box.scrollHeight;
}

// ---- start ----

async function main(): Promise<void> {
  cards = await api<Record<string, Card>>("/cards.json").catch(() => ({}));
  const route = async () => {
    const link = parseLink() ?? (await redeemInvite());
    if (link) game(link);
    else void lobby();
  };
  window.addEventListener("hashchange", () => location.reload());
  await route();
}

void main();

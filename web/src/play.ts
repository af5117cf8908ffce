// The play page: a lobby that creates a match against the server's bot or
// for a friend (POST /api/play/matches), and a board for one seat, joined
// through its link (#m=<match>&s=<seat>&k=<seat key>). The page renders only
// what the protocol sends to its seat; the seat key stays in the URL
// fragment, which browsers never send to a server.
// The library is served next to the page (web.Handler serves clients/ts's
// browser build at /matchgrain-client.js), not inlined: it stays the one
// the library's own tests checked.
//
// Modules: text.ts says things in words, interact.ts works out what a tap
// does from the legal intents, board.ts draws the board; this file holds
// the lobby, the session and its states, the action bar and the overlays.
import { Session, SessionError, TicketRefused } from "/matchgrain-client.js";
import type { ClockView, Intent, MatchView, ServerFrame, SessionState, WireEntry } from "../../clients/ts/src/index.js";
import { attackerOf, renderBattle, renderPlayer } from "./board.js";
import { $, button, el } from "./dom.js";
import { NONE, plan, type Plan, type Selection } from "./interact.js";
import { cardText, describe, finishText, PHASES, setCatalog, STEPS, type Card } from "./text.js";

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
/** LastPlay is what the lobby last created, so "Play again" can repeat it. */
interface LastPlay {
  name: string;
  deck: string;
  opponent: "bot" | "friend";
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

// joinInvite shows a friend's invite link (#m=…&i=…) as a page where the
// friend chooses a name, then redeems the invite with it (redeemInvite).
// It returns null for any other page.
function joinInvite(): Promise<SeatLink> | null {
  const p = new URLSearchParams(location.hash.slice(1));
  const matchId = p.get("m");
  const invite = p.get("i");
  if (!matchId || !invite) return null;
  $("#join").hidden = false;
  $("#game").hidden = true;
  $("#bar").hidden = true;
  $("#conn").hidden = true;
  $("header nav").hidden = true;
  const last = lastPlay();
  if (last) $<HTMLInputElement>("#join-name").value = last.name;
  return new Promise((resolve) => {
    $("#join-form").onsubmit = (e) => {
      e.preventDefault();
      const name = $<HTMLInputElement>("#join-name").value.trim() || "Friend";
      $<HTMLButtonElement>("#join-match").disabled = true;
      void redeemInvite(matchId, invite, name).then((link) => {
        $<HTMLButtonElement>("#join-match").disabled = false;
        if (!link) return;
        $("#join").hidden = true;
        resolve(link);
      });
    };
  });
}

// redeemInvite turns a friend's invite into a seat link for the name the
// friend chose: the invite is single use, and the seat key it yields
// derives from a claim drawn here, which the creator never sees. The claim
// is kept for this tab, so a retry sends the same claim and gets the same
// key (the first name stands).
async function redeemInvite(matchId: string, invite: string, name: string): Promise<SeatLink | null> {
  let claim = sessionStorage.getItem(`claim:${matchId}`);
  if (!claim) {
    const b = crypto.getRandomValues(new Uint8Array(16));
    claim = btoa(String.fromCharCode(...b)).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
    sessionStorage.setItem(`claim:${matchId}`, claim);
  }
  try {
    $("#join-error").textContent = "";
    const r = await api<{ seatKey: string }>("/api/play/invites", { matchId, invite, claim, name });
    history.replaceState(null, "", `#${new URLSearchParams({ m: matchId, s: "1", k: r.seatKey })}`);
    return { matchId, seat: 1, key: r.seatKey };
  } catch (e) {
    $("#join-error").textContent = `Could not join the match: ${(e as Error).message}`;
    return null;
  }
}

// ---- lobby ----

/** create makes a match and opens its board (the hash change reloads the page). */
async function create(play: LastPlay): Promise<void> {
  const r = await api<{ matchId: string; seatKey: string; invite?: string }>("/api/play/matches", play);
  if (r.invite) sessionStorage.setItem(`friend:${r.matchId}`, r.invite);
  sessionStorage.setItem(`created:${r.matchId}`, "1");
  localStorage.setItem("matchgrain:last", JSON.stringify(play));
  location.hash = new URLSearchParams({ m: r.matchId, s: "0", k: r.seatKey }).toString();
}

function lastPlay(): LastPlay | null {
  try {
    const p = JSON.parse(localStorage.getItem("matchgrain:last") ?? "null") as LastPlay | null;
    return p && typeof p.name === "string" && typeof p.deck === "string" ? p : null;
  } catch {
    return null;
  }
}

async function lobby(): Promise<void> {
  $("#lobby").hidden = false;
  $("#game").hidden = true;
  $("#bar").hidden = true;
  // Nothing to connect to or concede yet.
  $("#conn").hidden = true;
  $("header nav").hidden = true;
  const last = lastPlay();
  if (last) $<HTMLInputElement>("#name").value = last.name;
  const sel = $<HTMLSelectElement>("#deck");
  // The buttons come disabled and work only once the decks are listed: a
  // tap before that (a slow server, a quick player or test) did nothing.
  const buttons = [$<HTMLButtonElement>("#play-bot"), $<HTMLButtonElement>("#play-friend")];
  try {
    const decks = (await api<{ decks: Deck[] }>("/api/play/decks")).decks;
    sel.replaceChildren(...decks.map((d) => el("option", { value: d.id }, d.name)));
    if (last && decks.some((d) => d.id === last.deck)) sel.value = last.deck;
  } catch (e) {
    $("#lobby-error").textContent = `The server does not answer: ${(e as Error).message}. Reload to try again.`;
    return;
  }
  const start = async (opponent: "bot" | "friend") => {
    const name = $<HTMLInputElement>("#name").value.trim() || "Player";
    $("#lobby-error").textContent = "";
    try {
      await create({ name, deck: sel.value, opponent });
    } catch (e) {
      $("#lobby-error").textContent = `Could not create the match: ${(e as Error).message}`;
    }
  };
  $("#play-bot").onclick = () => void start("bot");
  $("#play-friend").onclick = () => void start("friend");
  for (const b of buttons) b.disabled = false;
}

// ---- game ----

/** Ended says why the seat's session is over (the match itself may go on). */
type Ended = "" | "replaced" | "refused" | "gaveup" | "closed";

interface GameState {
  link: SeatLink;
  session: Session | null;
  view: MatchView | null;
  legal: Intent[];
  clock: ClockView | null;
  offsetMs: number;
  conn: SessionState;
  ended: Ended;
  endedMessage: string;
  /** lostAt is when the connection was lost (0 while open). */
  lostAt: number;
  /** busy: an intent is on its way, or accepted and its events not yet here. */
  busy: boolean;
  awaitSeq: number;
  error: string;
  sel: Selection;
  plan: Plan | null;
  log: WireEntry[];
  /** turnPlayer and attacker come from TurnStarted and Attack events (-1: not seen). */
  turnPlayer: number;
  attacker: number;
  /** finishReason is why the match ended, from GameFinished or a finished snapshot (null: running, or a server without the field). */
  finishReason: number | null;
  /** friendKey is the friend's seat key when this tab created a friend match. */
  friendKey: string | null;
  endDismissed: boolean;
  confirming: boolean;
  /** renders counts board renders; intentsOut and lastIntentOut what went out on the wire (for tests). */
  renders: number;
  intentsOut: number;
  lastIntentOut: string;
}

const MAX_LOG = 300;
/** After this long without a connection the board is covered. */
const LOST_COVER_MS = 2_500;

/** RetryBudget is how long the page tries to reconnect before it gives up and lets the player decide. */
interface RetryBudget {
  backoffMs: number[];
  maxAttempts: number;
}

/**
 * retryBudget is about two minutes of attempts. A test scales it down by
 * setting window.matchgrainRetry before the page loads, so that giving up
 * is tested against a server really gone, without waiting two minutes.
 */
function retryBudget(): RetryBudget {
  const b = (window as unknown as { matchgrainRetry?: Partial<RetryBudget> }).matchgrainRetry;
  const def: RetryBudget = { backoffMs: [0, 500, 1_000, 2_000, 4_000], maxAttempts: 30 };
  if (!b) return def;
  const ok = Array.isArray(b.backoffMs) && b.backoffMs.length > 0 && b.backoffMs.every((x) => Number.isFinite(x) && x >= 0);
  return {
    backoffMs: ok ? b.backoffMs! : def.backoffMs,
    maxAttempts: Number.isInteger(b.maxAttempts) && b.maxAttempts! > 0 ? b.maxAttempts! : def.maxAttempts,
  };
}

function game(link: SeatLink): void {
  $("#lobby").hidden = true;
  $("#game").hidden = false;
  $("#bar").hidden = false;
  // A friend's page comes here from the join page without a reload.
  $("#conn").hidden = false;
  $("header nav").hidden = false;
  const st: GameState = {
    link,
    session: null,
    view: null,
    legal: [],
    clock: null,
    offsetMs: 0,
    conn: "connecting",
    ended: "",
    endedMessage: "",
    lostAt: Date.now(),
    busy: false,
    awaitSeq: 0,
    error: "",
    sel: NONE,
    plan: null,
    log: [],
    turnPlayer: -1,
    attacker: -1,
    finishReason: null,
    friendKey: link.seat === 0 ? sessionStorage.getItem(`friend:${link.matchId}`) : null,
    endDismissed: false,
    confirming: false,
    renders: 0,
    intentsOut: 0,
    lastIntentOut: "",
  };
  (window as unknown as { matchgrain: GameState }).matchgrain = st; // for tests and curious players

  friendLink(st);
  $("#toggle-log").onclick = () => {
    const box = $("#log");
    box.hidden = !box.hidden;
    renderLog(st);
  };
  $("#new-match").onclick = () => {
    void st.session?.leave("new match");
    location.hash = "";
  };
  $("#concede").onclick = () => {
    st.confirming = true;
    renderOverlay(st);
  };
  // One listener for every tap on the board: act if the plan offers it, and
  // show the tapped card's text either way.
  $("#game").addEventListener("click", (ev) => {
    const t = ev.target as HTMLElement;
    const c = t.closest<HTMLElement>("[data-card]");
    if (c) showCard(c.dataset.card!);
    const k = t.closest<HTMLElement>("[data-key]");
    const act = k && !st.busy && st.plan?.targets.get(k.dataset.key!);
    if (act) act();
  });
  $("#game").addEventListener("keydown", (ev) => {
    const k = (ev.target as HTMLElement).closest<HTMLElement>("[data-key]");
    if (k && (ev.key === "Enter" || ev.key === " ")) {
      ev.preventDefault();
      k.click();
    }
  });
  $("#game").addEventListener("mouseover", (ev) => {
    const c = (ev.target as HTMLElement).closest<HTMLElement>("[data-card]");
    if (c) showCard(c.dataset.card!);
  });
  startSession(st);
  setInterval(() => {
    renderClocks(st);
    renderOverlay(st); // a lost connection is covered once it lasts
  }, 250);
  render(st);
}

/** friendLink shows the friend's seat link to the player who made a friend match. */
function friendLink(st: GameState): void {
  if (!st.friendKey) return;
  // The friend gets the single-use invite, never a seat key (redeemInvite).
  const url = `${location.origin}${location.pathname}#${new URLSearchParams({ m: st.link.matchId, i: st.friendKey })}`;
  $("#friend-link").hidden = false;
  $<HTMLInputElement>("#friend-url").value = url;
  $("#copy-friend").onclick = () => {
    const done = (ok: boolean) => {
      $("#copy-friend").textContent = ok ? "Copied ✓" : "Select and copy";
      if (!ok) $<HTMLInputElement>("#friend-url").select();
      setTimeout(() => ($("#copy-friend").textContent = "Copy"), 2_000);
    };
    if (navigator.clipboard) navigator.clipboard.writeText(url).then(() => done(true), () => done(false));
    else done(false);
  };
}

/** ticketSource asks the server for a ticket; a refusal that retrying cannot cure ends the session. */
function ticketSource(link: SeatLink): () => Promise<string> {
  return async () => {
    const res = await fetch("/api/play/tickets", {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ matchId: link.matchId, seat: link.seat, seatKey: link.key }),
    });
    const data = (await res.json().catch(() => ({}))) as { ticket?: string; seatKey?: string; message?: string };
    if (res.ok && data.seatKey && data.seatKey !== link.key) {
      // The seat key signed with the current ticket key: keeping it keeps
      // the seat across a ticket-key rotation.
      link.key = data.seatKey;
      history.replaceState(null, "", `#${new URLSearchParams({ m: link.matchId, s: String(link.seat), k: link.key })}`);
    }
    if (res.ok && data.ticket) return data.ticket;
    const msg = data.message ?? `HTTP ${res.status}`;
    if (res.status >= 400 && res.status < 500 && res.status !== 408 && res.status !== 429) throw new TicketRefused(msg);
    throw new Error(msg);
  };
}

/** startSession (re)joins the seat: at load, and to take the seat back or try again. */
function startSession(st: GameState): void {
  st.session = null; // an ended one keeps its last view; the new one's snapshot replaces it
  st.ended = "";
  st.endedMessage = "";
  st.conn = "connecting";
  st.lostAt = Date.now();
  const proto = location.protocol === "https:" ? "wss:" : "ws:";
  Session.start(
    {
      url: `${proto}//${location.host}/game`,
      ticket: ticketSource(st.link),
      clientBuild: "matchgrain-web",
      ...retryBudget(),
      onWire: (e) => {
        if (e.dir === "out" && e.frame.type === "ClientIntent") {
          st.intentsOut++;
          st.lastIntentOut = e.frame.body.intent.type;
        }
        st.log.push(e);
        if (st.log.length > MAX_LOG) st.log.splice(0, st.log.length - MAX_LOG);
        if (!$("#log").hidden) renderLog(st);
      },
    },
    (f) => handleFrame(st, f),
  )
    .then((s) => {
      st.session = s;
      s.onState((state) => {
        st.conn = state;
        if (state === "open") st.lostAt = 0;
        else if (!st.lostAt) st.lostAt = Date.now();
        render(st);
      });
      st.conn = s.state;
      if (s.state === "open") st.lostAt = 0;
      render(st);
      void s.done.then((err) => sessionEnded(st, err));
    })
    .catch((e: Error) => sessionEnded(st, e));
}

function sessionEnded(st: GameState, err: Error | null): void {
  st.conn = "closed";
  st.busy = false;
  if (!err) return; // we left
  const code = err instanceof SessionError ? err.code : "";
  st.ended = code === "Replaced" ? "replaced" : code === "Rejected" ? "refused" : code === "GaveUp" ? "gaveup" : "closed";
  st.endedMessage = err.message;
  render(st);
}

function handleFrame(st: GameState, f: ServerFrame): void {
  const s = st.session;
  switch (f.type) {
    case "ServerHello":
      st.offsetMs = f.body.serverTimeMs - Date.now();
      return;
    case "ServerSnapshot":
      st.clock = f.body.view.clock;
      // A page opened or reloaded after the end learns why from the snapshot.
      if (f.body.view.finishReason !== null) st.finishReason = f.body.view.finishReason;
      break;
    case "ServerEvents":
      for (const e of f.body.events) {
        const ev = e.event;
        if (ev.type === "TurnStarted") st.turnPlayer = ev.body.player;
        else if (ev.type === "Attack") st.attacker = ev.body.player;
        else if (ev.type === "GameFinished") st.finishReason = ev.body.reason;
      }
      break;
    case "ServerIntentResult":
      if (!f.body.accepted) {
        st.error = `The server refused that: ${f.body.reason}`;
        st.busy = false;
      } else st.awaitSeq = f.body.eventSeq;
      break;
    case "ServerClock":
      st.clock = f.body.clock;
      break;
    case "ServerError":
      if (!f.body.fatal) st.error = f.body.message;
      break;
  }
  // The session keeps the whole view and this seat's legal intents from
  // events (the Decision event ends every batch), snapshots included.
  const view = (s ?? null)?.view ?? (f.type === "ServerSnapshot" ? f.body.view : st.view);
  if (view) {
    st.view = view;
    st.legal = s ? s.legalIntents : view.legalIntents;
  }
  if (st.busy && st.awaitSeq && (st.view?.eventSeq ?? 0) >= st.awaitSeq) {
    st.busy = false;
    st.awaitSeq = 0;
  }
  render(st);
}

/** send sends one legal intent; nothing else can be sent until its events are here. */
function send(st: GameState, intent: Intent): void {
  const s = st.session;
  if (!s || st.ended || st.busy || s.state === "closed") return;
  st.error = "";
  st.busy = true;
  st.awaitSeq = 0;
  st.sel = NONE;
  try {
    s.sendIntent(intent); // kept and re-sent by the session if the connection drops
  } catch (e) {
    st.busy = false;
    st.error = (e as Error).message;
  }
  render(st);
}

function select(st: GameState, sel: Selection): void {
  st.sel = sel;
  render(st);
}

// ---- rendering ----

function myDecision(st: GameState): boolean {
  const v = st.view;
  if (!v || v.isFinished || st.ended) return false;
  // The Decision event that ends every batch names the decider.
  return v.activePlayer === st.link.seat && st.legal.some((i) => i.type !== "Concede" && i.type !== "Unknown");
}

function render(st: GameState): void {
  const v = st.view;
  st.plan = v && myDecision(st) ? plan({ view: v, legal: st.legal, sel: st.sel, send: (i) => send(st, i), select: (s) => select(st, s) }) : null;
  // A selection the new decision no longer offers is dropped.
  if (st.plan && st.sel.kind !== "none" && st.plan.selected.size === 0) {
    st.sel = NONE;
    st.plan = plan({ view: v!, legal: st.legal, sel: NONE, send: (i) => send(st, i), select: (s) => select(st, s) });
  }
  if (v) {
    const me = st.link.seat;
    const active = st.busy ? null : st.plan;
    $("#opp").replaceChildren(renderPlayer(v, v.players[1 - me]!, false, active));
    $("#me").replaceChildren(renderPlayer(v, v.players[me]!, true, active));
    $("#battle").replaceChildren(...renderBattle(v, attackerOf(v, v.battle ? st.attacker : -1)));
    $("#match-label").textContent = `vs ${v.players[1 - me]!.name}`;
    $("#turn").textContent = `Turn ${v.turnNumber} · ${PHASES[v.phase] ?? v.phase}${v.step ? ` · ${STEPS[v.step] ?? v.step}` : ""}`;
    st.renders++;
  }
  renderBar(st);
  renderClocks(st);
  renderOverlay(st);
}

const CONN_TEXT: Record<SessionState, string> = {
  connecting: "Connecting…",
  open: "Connected",
  reconnecting: "Reconnecting…",
  closed: "Disconnected",
};

function renderBar(st: GameState): void {
  const v = st.view;
  const me = st.link.seat;
  const conn = $("#conn");
  conn.textContent = CONN_TEXT[st.conn];
  conn.className = `conn ${st.conn}`;
  $("#error").textContent = st.error;
  const decision = $("#decision");
  const prompt = $("#prompt");
  const actions = $("#actions");
  const rest = $<HTMLDetailsElement>("#rest");
  $<HTMLButtonElement>("#concede").disabled = !v || v.isFinished || !!st.ended;
  if (!v) {
    decision.textContent = "Joining the match…";
    decision.className = "decision";
    decision.dataset.state = "joining";
    prompt.textContent = "";
    actions.replaceChildren();
    rest.hidden = true;
    return;
  }
  if (v.isFinished) {
    const f = finishText(v, me, st.finishReason);
    decision.textContent = `Match over — ${f.title}`;
    decision.className = `decision over ${f.cls}`;
    decision.dataset.state = "finished";
    prompt.textContent = f.why;
    actions.replaceChildren(button("Play again", { id: "again-bar", class: "primary" }, () => void playAgain(st)));
    rest.hidden = true;
    return;
  }
  const opp = v.players[1 - me]!;
  const decider = v.activePlayer;
  const p = st.plan;
  // A running match whose clock does not run waits for the friend's first
  // visit (docs/protocol.md §9, point 9): nobody's time runs meanwhile.
  const waitingFriend = !!st.clock && !st.clock.isRunning && !v.isFinished;
  if (st.ended || st.conn !== "open") {
    decision.textContent = st.conn === "closed" ? "Not connected" : "Reconnecting…";
    decision.className = "decision offline";
    decision.dataset.state = "offline";
  } else if (p) {
    decision.textContent = st.busy ? "Sending…" : waitingFriend ? "Your decision · the clocks start when your friend joins" : "Your decision";
    decision.className = "decision mine";
    decision.dataset.state = st.busy ? "busy" : "mine";
  } else if (decider === me) {
    decision.textContent = "Your decision (updating…)";
    decision.className = "decision mine";
    decision.dataset.state = "updating";
  } else {
    decision.textContent = waitingFriend ? "Waiting for your friend to join…" : `${opp.name} is deciding…`;
    decision.className = "decision theirs";
    decision.dataset.state = "theirs";
  }
  prompt.textContent = p ? p.prompt : "";
  const disabled = !p || st.busy || !!st.ended || st.conn !== "open";
  actions.replaceChildren(
    ...(p?.buttons ?? []).map((b) => {
      const e = button(b.label, { id: `act-${b.id}`, class: b.primary ? "primary" : "" }, () => !st.busy && b.run());
      e.disabled = disabled || !!b.disabled;
      return e;
    }),
  );
  rest.hidden = !p || p.rest.length === 0;
  if (p && p.rest.length) {
    $("#rest-count").textContent = String(p.rest.length);
    $("#rest-list").replaceChildren(
      ...p.rest.map((i) => {
        const e = button(describe(st.view!, i), { "data-intent": i.type }, () => send(st, i));
        e.disabled = disabled;
        return e;
      }),
    );
  }
}

function showCard(id: string): void {
  const lines = cardText(id);
  const close = button("×", { class: "close", "aria-label": "Close the card text", id: "info-close" }, () => ($("#info").hidden = true));
  $("#info").replaceChildren(close, el("b", {}, lines[0] ?? id), ...lines.slice(1).map((l) => el("div", {}, l)));
  $("#info").hidden = false;
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
    const running = c.isRunning && c.decisionPlayer === seat && !v.isFinished;
    if (running) {
      const free = c.turnDeadlineMs - now;
      if (free >= 0) turn = fmt(free);
      else {
        bank = Math.max(0, bank - Math.max(0, now - Math.max(c.turnDeadlineMs, c.serverTimeMs)));
        turn = "bank";
      }
    }
    const who = seat === st.link.seat ? "You" : v.players[seat]!.name;
    const e = $(`#clock${seat}`);
    e.textContent = `${who} ${turn ? `${turn} · ` : ""}bank ${fmt(bank)}`;
    e.className = `clock${running ? " running" : ""}`;
  }
}

// ---- overlays: connection states, the end, the concession ----

function overlay(cls: string, title: string, text: string[], buttons: HTMLElement[]): void {
  const box = $("#overlay");
  box.hidden = false;
  box.dataset.state = cls;
  $("#overlay-box").className = `overlay-box ${cls}`;
  $("#overlay-box").replaceChildren(el("h2", {}, title), ...text.map((t) => el("p", {}, t)), el("div", { class: "buttons" }, ...buttons));
}

function renderOverlay(st: GameState): void {
  const v = st.view;
  const box = $("#overlay");
  const newMatch = () => button("Start a new match", { id: "ov-new" }, () => (location.hash = ""));
  if (st.confirming && v && !v.isFinished && !st.ended) {
    if (box.dataset.state !== "confirm")
      overlay("confirm", "Concede this match?", ["You lose the match at once."], [
        button("Concede", { id: "ov-concede", class: "danger" }, () => {
          st.confirming = false;
          send(st, { key: 17, type: "Concede", body: {} } as Intent);
        }),
        button("Keep playing", { id: "ov-keep", class: "primary" }, () => {
          st.confirming = false;
          renderOverlay(st);
        }),
      ]);
    return;
  }
  st.confirming = false;
  if (v?.isFinished) {
    if (st.endDismissed) box.hidden = true;
    else if (box.dataset.state !== "end") {
      const f = finishText(v, st.link.seat, st.finishReason);
      const dmg = (seat: number) => v.players[seat]!.faceDownDamage + v.players[seat]!.faceUpDamage.length;
      const me = st.link.seat;
      overlay("end", f.title, [f.why, `Final damage: you ${dmg(me)}, ${v.players[1 - me]!.name} ${dmg(1 - me)}.`], [
        button("Play again", { id: "ov-again", class: "primary" }, () => void playAgain(st)),
        button("See the board", { id: "ov-board" }, () => {
          st.endDismissed = true;
          renderOverlay(st);
        }),
        // A link, not a button: it can be opened in a tab or shared.
        el("a", { id: "ov-replay", class: "button", href: `/replay#${new URLSearchParams({ m: st.link.matchId })}` }, "Watch the replay"),
      ]);
      $("#overlay-box").classList.add(f.cls);
    }
    return;
  }
  let want = "";
  if (st.ended === "replaced") want = "replaced";
  else if (st.ended === "refused") want = "refused";
  else if (st.ended === "gaveup") want = "gaveup";
  else if (st.ended === "closed") want = "closed";
  else if (st.lostAt && Date.now() - st.lostAt > LOST_COVER_MS) want = v ? "lost" : "joining";
  if (!want) {
    box.hidden = true;
    box.dataset.state = "";
    return;
  }
  if (box.dataset.state === want) return;
  const retry = (label: string) => button(label, { id: "ov-retry", class: "primary" }, () => startSession(st));
  switch (want) {
    case "replaced":
      overlay(want, "Opened in another tab", ["This seat is now played in another tab or on another device; only one can play at a time."], [retry("Take the seat back here")]);
      break;
    case "refused":
      overlay(want, "This link no longer works", ["The server does not accept this seat link any more. The match cannot be joined from it."], [newMatch()]);
      break;
    case "gaveup":
      overlay(want, "Can't reach the server", ["We kept trying for about two minutes. The match waits on the server, but your clock keeps running."], [retry("Try again"), newMatch()]);
      break;
    case "closed":
      overlay(want, "Disconnected", [st.endedMessage], [retry("Reconnect"), newMatch()]);
      break;
    case "lost":
      overlay(want, "Connection lost — reconnecting…", ["The server does not answer. Your match is kept: you continue where you were as soon as it is back."], []);
      break;
    case "joining":
      overlay(want, "Joining your match…", ["Waiting for the server."], []);
      break;
  }
}

async function playAgain(st: GameState): Promise<void> {
  const last = lastPlay();
  void st.session?.leave("play again");
  if (!last || !sessionStorage.getItem(`created:${st.link.matchId}`)) {
    location.hash = "";
    return;
  }
  try {
    await create(last);
  } catch {
    location.hash = "";
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
  setCatalog(await api<Record<string, Card>>("/cards.json").catch(() => ({})));
  window.addEventListener("hashchange", () => location.reload());
  const link = parseLink() ?? (await joinInvite());
  if (link) game(link);
  else void lobby();
}

void main();

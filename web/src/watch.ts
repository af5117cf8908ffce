// The spectator page, /watch#m=MATCH: a live match as anyone may watch it
// (docs/protocol.md §14), both sides drawn with hands as counts. It asks
// the public play API for a spectator ticket on every (re)connection; the
// client library resumes from the last event, so a reload or a member's
// failover only pauses the board. It never sends an intent.
import { Session, SessionError, TicketRefused } from "/matchgrain-client.js";
import type { MatchView, ServerFrame } from "../../clients/ts/src/index.js";
import { attackerOf, renderBattle, renderPlayer } from "./board.js";
import { $, button, el } from "./dom.js";
import { PHASES, setCatalog, STEPS, type Card } from "./text.js";

const FINISH = ["sixth damage", "deck out", "concession", "time", "absence", "draw"];

interface WatchState {
  matchId: string;
  view: MatchView | null;
  attacker: number;
  reason: number | null;
  conn: string;
  delay: string;
}

function ticketSource(st: WatchState): () => Promise<string> {
  return async () => {
    const res = await fetch("/api/play/spectate", {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ matchId: st.matchId }),
    });
    const data = (await res.json().catch(() => ({}))) as { ticket?: string; message?: string; delayEvents?: number; delayMs?: number };
    if (res.ok && data.ticket) {
      const parts = [data.delayEvents ? `${data.delayEvents} events` : "", data.delayMs ? `${Math.round(data.delayMs / 1000)} s` : ""].filter(Boolean);
      st.delay = parts.length ? `delayed by ${parts.join(" and ")}` : "";
      return data.ticket;
    }
    const msg = data.message ?? `HTTP ${res.status}`;
    if (res.status >= 400 && res.status < 500 && res.status !== 408 && res.status !== 429) throw new TicketRefused(msg);
    throw new Error(msg);
  };
}

function render(st: WatchState): void {
  const v = st.view;
  $("#conn").textContent = [st.conn, st.delay].filter(Boolean).join(" · ");
  if (!v) return;
  $("#top").replaceChildren(renderPlayer(v, v.players[1]!, false, null));
  $("#bottom").replaceChildren(renderPlayer(v, v.players[0]!, false, null));
  $("#battle").replaceChildren(...renderBattle(v, attackerOf(v, v.battle ? st.attacker : -1)));
  const names = v.players.map((p) => p.name);
  if (v.isFinished) {
    const reason = st.reason ?? v.finishReason;
    const why = reason != null ? ` by ${FINISH[reason] ?? reason}` : "";
    $("#status").textContent = v.winner === -1 ? `Draw${why}` : `${names[v.winner]} wins${why}`;
    $("#status").dataset.finished = "true";
    // The end offers the replay (docs/protocol.md §15), read from the log.
    $("#conn").replaceChildren(el("a", { id: "replay-link", href: `/replay#${new URLSearchParams({ m: st.matchId })}` }, "Replay this match"));
    return;
  }
  const who = v.activePlayer >= 0 ? names[v.activePlayer] : "";
  $("#status").textContent = `Turn ${v.turnNumber} · ${PHASES[v.phase] ?? v.phase}${v.step ? ` · ${STEPS[v.step] ?? v.step}` : ""} · ${who} decides`;
}

function handleFrame(st: WatchState, s: Session | null, f: ServerFrame): void {
  if (f.type === "ServerEvents") {
    for (const e of f.body.events) {
      if (e.event.type === "Attack") st.attacker = e.event.body.player;
      if (e.event.type === "GameFinished") st.reason = e.event.body.reason;
    }
  }
  st.view = s?.view ?? (f.type === "ServerSnapshot" ? f.body.view : st.view);
  render(st);
}

/** listLive shows the running matches to watch (GET /api/play/live). */
async function listLive(): Promise<void> {
  const res = await fetch("/api/play/live");
  const data = (await res.json().catch(() => ({}))) as { matches?: { matchId: string; names: string[]; turn: number; spectators: number }[]; message?: string };
  if (!res.ok || !data.matches) {
    $("#status").textContent = `No list of live matches: ${data.message ?? `HTTP ${res.status}`}`;
    return;
  }
  $("#status").textContent = data.matches.length ? "Live matches" : "No match is being played right now.";
  $("#battle").replaceChildren(
    el(
      "ul",
      { id: "live" },
      ...data.matches.map((m) =>
        el(
          "li",
          {},
          el("a", { href: `/watch#${new URLSearchParams({ m: m.matchId })}`, "data-match": m.matchId }, `${m.names[0]} vs ${m.names[1]}`),
          ` · turn ${m.turn} · ${m.spectators} watching`,
        ),
      ),
    ),
  );
}

/**
 * showFull says the match has as many spectators as it allows (close 4429,
 * docs/protocol.md §14.7): the session has stopped, and trying again later
 * is the viewer's choice.
 */
function showFull(): void {
  $("#status").textContent = "This match has as many spectators as it allows. Try again later.";
  $("#status").dataset.full = "true";
  $("#conn").replaceChildren(button("Try again", { id: "retry" }, () => location.reload()));
}

function isFull(e: unknown): boolean {
  return e instanceof SessionError && e.code === "SpectatorsFull";
}

async function main(): Promise<void> {
  const matchId = new URLSearchParams(location.hash.slice(1)).get("m") ?? "";
  const st: WatchState = { matchId, view: null, attacker: -1, reason: null, conn: "connecting", delay: "" };
  // Picking a match from the list changes only the fragment: start over.
  window.addEventListener("hashchange", () => location.reload());
  if (!matchId) {
    await listLive();
    return;
  }
  const cards = await fetch("/cards.json").then((r) => r.json() as Promise<Record<string, Card>>).catch(() => ({}));
  setCatalog(cards);
  let session: Session | null = null;
  const proto = location.protocol === "https:" ? "wss:" : "ws:";
  session = await Session.start(
    { url: `${proto}//${location.host}/game`, ticket: ticketSource(st), clientBuild: "matchgrain-web-watch", backoffMs: [0, 500, 1_000, 2_000, 4_000], maxAttempts: 30 },
    (f) => handleFrame(st, session, f),
  );
  session.onState((state) => {
    st.conn = state;
    render(st);
  });
  st.conn = session.state;
  render(st);
  const err = await session.done;
  if (isFull(err)) {
    showFull();
  } else if (err) {
    st.conn = `ended: ${err.message}`;
    render(st);
  }
}

void main().catch((e: unknown) => {
  if (isFull(e)) showFull();
  else $("#status").textContent = `Cannot watch: ${e instanceof Error ? e.message : String(e)}`;
});

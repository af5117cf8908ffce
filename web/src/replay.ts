// The replay viewer, /replay#m=MATCH&b=N: a finished match replayed from its
// durable log as a spectator saw it (docs/protocol.md §15), batch by batch:
// step forward and back, jump to a turn, play at a chosen speed, and a link
// to the batch on screen. The boards are the spectator's view kept from the
// events (the client library's ViewKeeper), one per batch, so stepping back
// shows exactly the board the match showed then.
import { decodeServerFrame, ViewKeeper } from "/matchgrain-client.js";
import type { MatchView } from "../../clients/ts/src/index.js";
import { attackerOf, renderBattle, renderPlayer } from "./board.js";
import { $, button, el } from "./dom.js";
import { PHASES, setCatalog, STEPS, type Card } from "./text.js";

const FINISH = ["sixth damage", "deck out", "concession", "time", "absence", "draw"];
const SPEEDS = [0.5, 1, 2, 4, 8];

/** Step is the board after one batch, and who attacked in it. */
interface Step {
  view: MatchView;
  attacker: number;
  reason: number | null;
}

interface ReplayState {
  matchId: string;
  steps: Step[];
  at: number;
  speed: number;
  timer: number;
}

/** frames splits a replay body into its length-prefixed frames (docs/protocol.md §11.5). */
function frames(buf: Uint8Array): Uint8Array[] {
  const out: Uint8Array[] = [];
  const dv = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  for (let off = 0; off + 4 <= buf.length; ) {
    const n = dv.getUint32(off);
    out.push(buf.subarray(off + 4, off + 4 + n));
    off += 4 + n;
  }
  return out;
}

/** steps replays the frames into one board per batch. */
function steps(body: Uint8Array): Step[] {
  let keeper: ViewKeeper | null = null;
  const out: Step[] = [];
  let attacker = -1;
  let reason: number | null = null;
  for (const b of frames(body)) {
    const f = decodeServerFrame(b);
    if (f.type === "ServerSnapshot") {
      keeper = ViewKeeper.fromSnapshot(f.body.view);
      out.push({ view: keeper.view, attacker, reason });
    } else if (f.type === "ServerEvents" && keeper) {
      for (const e of f.body.events) {
        keeper.apply(e);
        if (e.event.type === "Attack") attacker = e.event.body.player;
        if (e.event.type === "GameFinished") reason = e.event.body.reason;
      }
      keeper.setSeq(f.body.toSeq);
      out.push({ view: keeper.view, attacker, reason });
    }
  }
  return out;
}

function render(st: ReplayState): void {
  const s = st.steps[st.at];
  if (!s) return;
  const v = s.view;
  $("#top").replaceChildren(renderPlayer(v, v.players[1]!, false, null));
  $("#bottom").replaceChildren(renderPlayer(v, v.players[0]!, false, null));
  $("#battle").replaceChildren(...renderBattle(v, attackerOf(v, v.battle ? s.attacker : -1)));
  const names = v.players.map((p) => p.name);
  let what = `Turn ${v.turnNumber} · ${PHASES[v.phase] ?? v.phase}${v.step ? ` · ${STEPS[v.step] ?? v.step}` : ""}`;
  if (v.isFinished) {
    const why = s.reason != null ? ` by ${FINISH[s.reason] ?? s.reason}` : "";
    what = v.winner === -1 ? `Draw${why}` : `${names[v.winner]} wins${why}`;
  }
  $("#status").textContent = what;
  $("#status").dataset.finished = String(v.isFinished);
  $("#position").textContent = `batch ${st.at} of ${st.steps.length - 1} · seq ${v.eventSeq}`;
  $("#position").dataset.at = String(st.at);
  $<HTMLInputElement>("#turn").value = String(v.turnNumber);
  history.replaceState(null, "", `#${new URLSearchParams({ m: st.matchId, b: String(st.at) })}`);
}

function go(st: ReplayState, at: number): void {
  st.at = Math.max(0, Math.min(st.steps.length - 1, at));
  render(st);
}

function stop(st: ReplayState): void {
  if (st.timer) clearInterval(st.timer);
  st.timer = 0;
  $("#play").textContent = "Play";
}

function play(st: ReplayState): void {
  stop(st);
  if (st.at >= st.steps.length - 1) go(st, 0);
  st.timer = window.setInterval(() => {
    if (st.at >= st.steps.length - 1) return stop(st);
    go(st, st.at + 1);
  }, 1000 / st.speed);
  $("#play").textContent = "Pause";
}

function controls(st: ReplayState): HTMLElement {
  const turn = el("input", { id: "turn", type: "number", min: "1", "aria-label": "turn" });
  turn.addEventListener("change", () => {
    const n = Number(turn.value);
    const i = st.steps.findIndex((s) => s.view.turnNumber >= n);
    stop(st);
    go(st, i < 0 ? st.steps.length - 1 : i);
  });
  const speed = el("select", { id: "speed", "aria-label": "speed" }, ...SPEEDS.map((x) => el("option", { value: String(x) }, `${x}×`)));
  speed.value = String(st.speed);
  speed.addEventListener("change", () => {
    st.speed = Number(speed.value);
    if (st.timer) play(st);
  });
  return el(
    "nav",
    { class: "replay-controls" },
    button("⏮ Start", { id: "first" }, () => (stop(st), go(st, 0))),
    button("◀ Back", { id: "back" }, () => (stop(st), go(st, st.at - 1))),
    button("Play", { id: "play" }, () => (st.timer ? stop(st) : play(st))),
    button("Forward ▶", { id: "forward" }, () => (stop(st), go(st, st.at + 1))),
    button("End ⏭", { id: "last" }, () => (stop(st), go(st, st.steps.length - 1))),
    el("label", {}, "Turn ", turn),
    el("label", {}, "Speed ", speed),
    button("Copy link", { id: "share" }, () => void navigator.clipboard?.writeText(location.href).catch(() => undefined)),
    el("span", { id: "position" }),
  );
}

async function main(): Promise<void> {
  const params = new URLSearchParams(location.hash.slice(1));
  const matchId = params.get("m") ?? "";
  if (!matchId) {
    $("#status").textContent = "No match to replay: the link needs #m=MATCH.";
    return;
  }
  setCatalog(await fetch("/cards.json").then((r) => r.json() as Promise<Record<string, Card>>).catch(() => ({})));
  const res = await fetch(`/api/play/replays/${encodeURIComponent(matchId)}`);
  if (!res.ok) {
    const data = (await res.json().catch(() => ({}))) as { error?: string; message?: string; winner?: number; finishReason?: number };
    const result =
      data.error === "log_pruned" && data.winner != null
        ? ` The result is kept: ${data.winner === -1 ? "a draw" : `seat ${data.winner} won`}${data.finishReason != null ? ` by ${FINISH[data.finishReason] ?? data.finishReason}` : ""}.`
        : "";
    $("#status").textContent = `No replay: ${data.message ?? `HTTP ${res.status}`}.${result}`;
    return;
  }
  const st: ReplayState = { matchId, steps: steps(new Uint8Array(await res.arrayBuffer())), at: 0, speed: 1, timer: 0 };
  $("#controls").replaceChildren(controls(st));
  go(st, Number(params.get("b") ?? 0) || 0);
  (window as unknown as { matchgrainReplay: ReplayState }).matchgrainReplay = st;
}

void main().catch((e: unknown) => {
  $("#status").textContent = `Cannot replay: ${e instanceof Error ? e.message : String(e)}`;
});

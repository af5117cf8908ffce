// The ops console: members, matches per member, live matches with their
// clocks and owners, recent failovers and the metrics that matter, read from
// GET /api/admin/matches and /metrics with the admin token. The token
// stays in this tab's sessionStorage and goes only into Authorization headers.

interface Member {
  id: string;
  address: string;
  kinds: string[];
  matches: number;
}
interface Clock {
  decisionPlayer: number;
  turnDeadlineMs: number;
  bank0Ms: number;
  bank1Ms: number;
  isRunning: boolean;
  serverTimeMs: number;
}
interface Status {
  names: [string, string];
  bots: [boolean, boolean];
  connected: [boolean, boolean];
  turn: number;
  decider: number;
  damage: [number, number];
  logSeq: number;
  clock: Clock;
}
interface MatchEntry {
  matchId: string;
  owner: string;
  epoch: number;
  status?: Status;
  error?: string;
}
interface Takeover {
  matchId: string;
  epoch: number;
  at: string;
  logSeq: number;
  recoveryMs: number;
}
interface Overview {
  at: string;
  self: string;
  members: Member[];
  matches: MatchEntry[];
  truncated: boolean;
  takeovers: Takeover[];
}

// The metrics worth a glance, by name prefix.
const METRICS = [
  "matchgrain_grains_active",
  "matchgrain_grain_intents_accepted_total",
  "matchgrain_grain_intents_rejected_total",
  "matchgrain_store_appends_total",
  "matchgrain_store_append_errors_total",
  "matchgrain_store_append_seconds_sum",
  "matchgrain_edge_connections ",
  "matchgrain_edge_connections{",
  "matchgrain_edge_closes_total",
  "matchgrain_edge_intents_total",
  "matchgrain_edge_matches_created_total",
  "matchgrain_edge_tickets_issued_total",
];

const $ = <T extends HTMLElement = HTMLElement>(sel: string): T => document.querySelector<T>(sel)!;

function row(...cells: (string | number)[]): HTMLTableRowElement {
  const tr = document.createElement("tr");
  for (const c of cells) {
    const td = document.createElement("td");
    td.textContent = String(c);
    tr.append(td);
  }
  return tr;
}

function fmt(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  return `${Math.floor(s / 60)}:${String(s % 60).padStart(2, "0")}`;
}

function short(id: string): string {
  return id.length > 12 ? `${id.slice(0, 10)}…` : id;
}

function clockCell(c: Clock, seat: number): string {
  const bank = seat === 0 ? c.bank0Ms : c.bank1Ms;
  if (c.isRunning && c.decisionPlayer === seat) {
    const free = c.turnDeadlineMs - c.serverTimeMs;
    return free > 0 ? `${fmt(free)} + bank ${fmt(bank)}` : `bank ${fmt(bank)}`;
  }
  return `bank ${fmt(bank)}`;
}

async function get(path: string, token: string): Promise<Response> {
  return fetch(path, { headers: { Authorization: `Bearer ${token}` }, cache: "no-store" });
}

/**
 * readable prints a metric's value for a person, not as Prometheus writes it
 * (0.27964386800000013): counts with thousands separators, fractions to
 * four significant digits, seconds with their unit (under one as ms).
 */
function readable(name: string, value: string): string {
  const n = Number(value);
  if (value.trim() === "" || !Number.isFinite(n)) return value; // NaN, +Inf
  const seconds = /_seconds(_sum)?(\{|$)/.test(name); // a bucket or a count is a count
  if (Number.isInteger(n) && !seconds) return n.toLocaleString("en-US");
  const short = (x: number) => String(Number(x.toPrecision(4)));
  if (!seconds) return short(n);
  return Math.abs(n) < 1 ? `${short(n * 1000)} ms` : `${short(n)} s`;
}

async function refresh(token: string): Promise<boolean> {
  const res = await get("/api/admin/matches", token);
  if (res.status === 401) {
    $("#login-error").textContent = "wrong token";
    return false;
  }
  if (!res.ok) {
    $("#login-error").textContent = `overview: HTTP ${res.status}`;
    return true;
  }
  $("#login-error").textContent = "";
  const ov = (await res.json()) as Overview;
  $("#panels").hidden = false;
  $("#updated").textContent = `updated ${new Date(ov.at).toLocaleTimeString()} · this member ${short(ov.self)}`;
  $("#members tbody").replaceChildren(
    ...ov.members.map((m) => row(m.id + (m.id === ov.self ? " (this)" : ""), m.address, m.kinds.filter((k) => k !== "prototopic").join(", "), m.matches)),
  );
  $("#match-count").textContent = `(${ov.matches.length}${ov.truncated ? "+" : ""})`;
  $("#matches tbody").replaceChildren(
    ...ov.matches.map((m) => {
      const s = m.status;
      if (!s) return row(m.matchId, "—", short(m.owner), m.epoch, "—", m.error ?? "—", "", "", "", "", "");
      const players = s.names.map((n, i) => `${n}${s.bots[i] ? " [bot]" : ""}`).join(" vs ");
      const tr = row(
        m.matchId,
        players,
        short(m.owner),
        m.epoch,
        s.turn,
        s.decider >= 0 ? `P${s.decider} ${s.names[s.decider]}` : "—",
        clockCell(s.clock, 0),
        clockCell(s.clock, 1),
        `${s.damage[0]} / ${s.damage[1]}`,
        s.connected.map((c, i) => (s.bots[i] ? "bot" : c ? "yes" : "no")).join(" / "),
        s.logSeq,
      );
      tr.dataset.match = m.matchId;
      return tr;
    }),
  );
  $("#takeovers tbody").replaceChildren(
    ...ov.takeovers.map((t) => row(new Date(t.at).toLocaleTimeString(), t.matchId, t.epoch, t.logSeq, `${t.recoveryMs} ms`)),
  );
  const mres = await get("/metrics", token);
  if (mres.ok) {
    const text = await mres.text();
    const rows = text
      .split("\n")
      // Counters of close reasons that never happened are noise here.
      .filter((l) => l && !l.startsWith("#") && METRICS.some((p) => l.startsWith(p)) && !(l.includes("closes_total") && l.endsWith(" 0")))
      .map((l) => {
        const i = l.lastIndexOf(" ");
        return row(l.slice(0, i), readable(l.slice(0, i), l.slice(i + 1)));
      });
    $("#metrics tbody").replaceChildren(...rows);
  }
  return true;
}

function start(token: string): void {
  sessionStorage.setItem("matchgrain-admin-token", token);
  $("#login").hidden = true;
  const tick = async () => {
    let ok = true;
    try {
      ok = await refresh(token);
    } catch (e) {
      $("#login-error").textContent = (e as Error).message;
    }
    if (!ok) {
      sessionStorage.removeItem("matchgrain-admin-token");
      $("#login").hidden = false;
      return;
    }
    setTimeout(tick, 2000);
  };
  void tick();
}

$("#login").addEventListener("submit", (e) => {
  e.preventDefault();
  start($<HTMLInputElement>("#token").value.trim());
});
const saved = sessionStorage.getItem("matchgrain-admin-token");
if (saved) start(saved);

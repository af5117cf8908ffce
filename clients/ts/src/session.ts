// Session: a reconnecting protocol session for one seat, the TypeScript
// counterpart of the Go client's Session (client/session.go). It keeps one
// invariant for its user: the frames it delivers form the seat's event
// stream exactly once and in order — no duplicate event, no gap other than
// events hidden from the seat — across reconnections.

import { applyEvent, boardFromView, cloneBoard, diffBoards, emptyBoard, type Board } from "./board.js";
import { decodeServerFrame, encodeClientFrame } from "./codec.js";
import { ViewKeeper, isDecision } from "./view.js";
import {
  CloseProtocolViolation,
  CloseReplaced,
  CloseSpectatorsFull,
  CloseTicket,
  CloseUnsupportedVersion,
  Version,
  type ClientFrame,
  type ClientIntent,
  type Intent,
  type MatchView,
  type ServerError,
  type ServerEvents,
  type ServerFrame,
  type ServerHello,
  type ServerResumeTicket,
} from "./schema.gen.js";

/** DEFAULT_BACKOFF_MS is the wait before each reconnection attempt: at once, then 2, 10 and 30 seconds. */
export const DEFAULT_BACKOFF_MS: readonly number[] = [0, 2_000, 10_000, 30_000];

/**
 * RESUME_TICKET_MARGIN_MS: a resume ticket that expires within this long
 * (server time, by the session's clock offset estimate) is not used; the
 * hello would arrive too late or the estimate may be off by that much.
 */
const RESUME_TICKET_MARGIN_MS = 1_000;

/** WebSocketLike is what the session needs of a WebSocket: the browser's, or the `ws` package's in Node. */
export interface WebSocketLike {
  binaryType: string;
  readonly readyState: number;
  send(data: Uint8Array): void;
  close(code?: number, reason?: string): void;
  /** terminate (the `ws` package only) drops the TCP connection without a close handshake. */
  terminate?: () => void;
  onopen: ((ev: unknown) => void) | null;
  onmessage: ((ev: { data: unknown }) => void) | null;
  onclose: ((ev: { code: number; reason: string }) => void) | null;
  onerror: ((ev: unknown) => void) | null;
}

/** WebSocketConstructor builds a WebSocketLike for a URL. */
export type WebSocketConstructor = new (url: string) => WebSocketLike;

/**
 * TicketSource returns a fresh ticket; the session calls it before every
 * attempt (tickets are single use), except the first attempt after a lost
 * connection when it holds a resume ticket from the server
 * (SessionConfig.resumeTickets). Any error counts as a failed attempt and
 * is retried, except TicketRefused, which ends the session.
 */
export type TicketSource = () => Promise<string>;

/**
 * TicketRefused is what a TicketSource throws when no later attempt can get
 * a ticket either (the seat key is wrong, the match is gone): the session
 * then ends with SessionError "Rejected" at once instead of retrying for
 * ever. Unreachable servers and rate limits are ordinary errors.
 */
export class TicketRefused extends Error {
  constructor(message: string, cause?: unknown) {
    super(message, cause === undefined ? undefined : { cause });
    this.name = "TicketRefused";
  }
}

/** WireEntry is one frame in or out, for a protocol log. The ticket of a ClientHello or ServerResumeTicket is replaced by "…". */
export interface WireEntry {
  dir: "in" | "out";
  frame: ServerFrame | ClientFrame;
  bytes: number;
  /** at is Date.now() when the frame was sent or received. */
  at: number;
}

/** SessionConfig configures a Session. Optional fields take the default in their comment. */
export interface SessionConfig {
  /** url is "ws://host:port/game" (or wss://). Required. */
  url: string;
  /** ticket obtains a fresh ticket for each attempt. Required. */
  ticket: TicketSource;
  /** clientBuild goes into ClientHello for the server's logs. */
  clientBuild?: string;
  /**
   * resumeTickets asks the server for ServerResumeTicket frames (default
   * true): the first attempt after a lost connection then uses the newest
   * one instead of calling ticket, which spares the ticket service a burst
   * when a whole member's players reconnect at once (docs/protocol.md §4
   * point 7). False: every attempt calls ticket.
   */
  resumeTickets?: boolean;
  /** backoffMs is the wait before attempt i (the last value repeats); default DEFAULT_BACKOFF_MS. */
  backoffMs?: readonly number[];
  /** maxAttempts failed attempts in a row end the session (default backoffMs.length; negative: never). */
  maxAttempts?: number;
  /** pingIntervalMs: send ClientPing after this long without sending (default 15 s, under the server's 20 s idle). */
  pingIntervalMs?: number;
  /** readTimeoutMs: nothing from the server this long means the connection is dead (default 45 s). */
  readTimeoutMs?: number;
  /** WebSocket is the constructor to use (default: the global WebSocket, else the `ws` package). */
  WebSocket?: WebSocketConstructor;
  /** onWire, if set, sees every frame sent and received (the protocol log). */
  onWire?: (e: WireEntry) => void;
  /** log, if set, receives connection events. Tickets are never passed to it. */
  log?: (msg: string, fields?: Record<string, unknown>) => void;
}

/**
 * SessionErrorCode says why a session ended or an operation failed.
 * "SpectatorsFull": the match has as many spectators as it allows (close
 * 4429, docs/protocol.md §14.7). A session refused so on its first
 * connection ends at once; one that was watching keeps trying per backoffMs
 * (its own lost connection may hold the place until the server notices it
 * is gone) and ends with this code when its attempts run out on that
 * refusal. A caller shows it and may start a new session later.
 */
export type SessionErrorCode = "Closed" | "NotConnected" | "Replaced" | "GaveUp" | "Rejected" | "SpectatorsFull";

/** SessionError is an error of a Session; cause holds the underlying error. */
export class SessionError extends Error {
  /** code classifies the error. */
  readonly code: SessionErrorCode;
  constructor(code: SessionErrorCode, message: string, cause?: unknown) {
    super(message, cause === undefined ? undefined : { cause });
    this.name = "SessionError";
    this.code = code;
  }
}

/** CloseError is how one connection ended: the close code (1006 without one) and the last fatal ServerError. */
export class CloseError extends Error {
  readonly code: number;
  readonly reason: string;
  readonly serverError: ServerError["body"] | undefined;
  constructor(code: number, reason: string, serverError?: ServerError["body"]) {
    super(
      serverError
        ? `connection closed: ${code} (server error ${serverError.code}: ${serverError.message})`
        : `connection closed: ${code}${reason ? ` ${reason}` : ""}`,
    );
    this.name = "CloseError";
    this.code = code;
    this.reason = reason;
    this.serverError = serverError;
  }
}

/** SessionState is where the session is: connecting, open, reconnecting or closed. */
export type SessionState = "connecting" | "open" | "reconnecting" | "closed";

type FrameListener = (f: ServerFrame) => void;
type StateListener = (s: SessionState) => void;

/** fatalClose reports close codes that a new attempt cannot cure. */
function fatalClose(err: unknown): boolean {
  return err instanceof CloseError && (err.code === CloseUnsupportedVersion || err.code === CloseProtocolViolation);
}

/** spectatorsFull reports a refusal because the match has as many spectators as it allows. */
function spectatorsFull(err: unknown): err is CloseError {
  return err instanceof CloseError && err.code === CloseSpectatorsFull;
}

function spectatorsFullError(err: CloseError, attempts?: number): SessionError {
  const after = attempts === undefined ? "" : ` (after ${attempts} attempts)`;
  return new SessionError("SpectatorsFull", `client: the match has as many spectators as it allows${after}: ${err.message}`, err);
}

/** newIntentId returns a random UUID v4 string (getRandomValues works in insecure browser contexts too). */
export function newIntentId(): string {
  const b = new Uint8Array(16);
  const c = (globalThis as { crypto?: { getRandomValues?: (a: Uint8Array) => Uint8Array } }).crypto;
  if (c?.getRandomValues) c.getRandomValues(b);
  else for (let i = 0; i < 16; i++) b[i] = Math.floor(Math.random() * 256); // Node 18 without a global crypto
  b[6] = (b[6]! & 0x0f) | 0x40;
  b[8] = (b[8]! & 0x3f) | 0x80;
  const h = Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

async function defaultWebSocket(): Promise<WebSocketConstructor> {
  const g = (globalThis as { WebSocket?: WebSocketConstructor }).WebSocket;
  if (g) return g;
  // Node before 22: the `ws` package (a dependency of this package). The
  // specifier is a variable so that browser bundlers leave it alone.
  const name = "ws";
  const mod = (await import(name)) as { default?: WebSocketConstructor; WebSocket?: WebSocketConstructor };
  const ctor = mod.WebSocket ?? mod.default;
  if (!ctor) throw new Error("client: no WebSocket implementation (install the ws package)");
  return ctor;
}

const WS_OPEN = 1;

/**
 * Session is a reconnecting protocol session for one seat. It performs the
 * handshake with a fresh ticket per attempt (or, first after a lost
 * connection, the server's resume ticket), keeps lastSeq, hides duplicate
 * events and event gaps (asking for a resync), re-sends unanswered intents
 * after a reconnect under their original intentId (the server answers
 * duplicate=true if it already applied one), pings when idle, and keeps a
 * local Board checked against every snapshot.
 *
 * Frames reach listeners (onFrame) in order: ServerHello on every
 * (re)connection, ServerSnapshot, ServerEvents (only events not seen before,
 * never with a gap except for hidden events), ServerIntentResult,
 * ServerClock and ServerError. Pings, pongs and ServerResumeTicket (a
 * secret the session keeps for its next reconnect) are handled inside.
 */
export class Session {
  private readonly cfg: Required<Omit<SessionConfig, "WebSocket" | "onWire" | "log" | "clientBuild">> &
    Pick<SessionConfig, "onWire" | "log"> & { clientBuild: string };
  private WS!: WebSocketConstructor;
  private ws: WebSocketLike | null = null;
  private frameListeners = new Set<FrameListener>();
  private stateListeners = new Set<StateListener>();
  private _state: SessionState = "connecting";
  private _seat = -1;
  private _lastSeq = 0;
  private resyncAsked = false;
  private pending: ClientIntent["body"][] = [];
  private _snapshot: MatchView | null = null;
  private _board: Board = emptyBoard();
  private boardValid = false;
  /** keeper is the whole view kept from events, from the first snapshot on. */
  private keeper: ViewKeeper | null = null;
  /** decisions counts Decision events applied: a server without them keeps no comparable view. */
  private decisions = 0;
  private matchId = "";
  private checks = 0;
  private viewChecks = 0;
  private mismatches: string[] = [];
  private leaving = false;
  private _reconnects = 0;
  private everOpen = false;
  /** connecting is the socket of the attempt under way, closed if the session ends. */
  private connecting: WebSocketLike | null = null;
  /** resumeTicket is the newest ServerResumeTicket, for the first attempt after a loss; memory only, never logged. */
  private resumeTicket: ServerResumeTicket["body"] | null = null;
  private _offsetMs = 0;
  private pingSent = new Map<number, number>();
  private nonce = 0;
  private lastSent = 0;
  private lastRecv = 0;
  private timer: ReturnType<typeof setInterval> | null = null;
  private _err: Error | null = null;
  private ended = false;
  private wakeups = new Set<() => void>();
  private resolveDone!: (err: Error | null) => void;
  /** done resolves when the session has ended, with why (null after leave). */
  readonly done: Promise<Error | null>;

  private constructor(cfg: SessionConfig) {
    const backoff = cfg.backoffMs ?? DEFAULT_BACKOFF_MS;
    this.cfg = {
      url: cfg.url,
      ticket: cfg.ticket,
      clientBuild: cfg.clientBuild ?? "",
      resumeTickets: cfg.resumeTickets ?? true,
      backoffMs: backoff.length ? backoff : [0],
      maxAttempts: cfg.maxAttempts ?? Math.max(backoff.length, 1),
      pingIntervalMs: cfg.pingIntervalMs ?? 15_000,
      readTimeoutMs: cfg.readTimeoutMs ?? 45_000,
      onWire: cfg.onWire,
      log: cfg.log,
    };
    this.done = new Promise((r) => (this.resolveDone = r));
  }

  /**
   * start connects (retrying per backoffMs), completes the handshake and
   * returns the running session; it rejects if no attempt succeeds. Add
   * listeners in onFrame before or after: the first ServerHello is also
   * available as hello, and the frames after it are delivered from the next
   * task on.
   */
  static async start(cfg: SessionConfig, listener?: FrameListener): Promise<Session> {
    if (!cfg.url || !cfg.ticket) throw new Error("client: SessionConfig.url and SessionConfig.ticket are required");
    const s = new Session(cfg);
    if (listener) s.frameListeners.add(listener);
    s.WS = cfg.WebSocket ?? (await defaultWebSocket());
    try {
      await s.connect();
    } catch (e) {
      s.finish(e as Error);
      throw e;
    }
    return s;
  }

  /** onFrame adds a listener for every delivered frame; the returned function removes it. */
  onFrame(l: FrameListener): () => void {
    this.frameListeners.add(l);
    return () => this.frameListeners.delete(l);
  }

  /** onState adds a listener for state changes; the returned function removes it. */
  onState(l: StateListener): () => void {
    this.stateListeners.add(l);
    return () => this.stateListeners.delete(l);
  }

  /** state is where the session is now. */
  get state(): SessionState {
    return this._state;
  }
  /** seat is the seat index from the last ServerHello (-1 before). */
  get seat(): number {
    return this._seat;
  }
  /** lastSeq is the last eventSeq taken in. */
  get lastSeq(): number {
    return this._lastSeq;
  }
  /** snapshot is the last snapshot received, or null. */
  get snapshot(): MatchView | null {
    return this._snapshot;
  }
  /** board is a copy of the local view kept from snapshots and events. */
  get board(): Board {
    return cloneBoard(this._board);
  }
  /**
   * view is the seat's whole MatchView kept from events since the last
   * snapshot (docs/protocol.md, the Decision event): after every ServerEvents it equals a
   * fresh snapshot, clock from ServerClock and names from the last snapshot.
   * Null before the first snapshot.
   */
  get view(): MatchView | null {
    return this.keeper ? this.keeper.view : null;
  }
  /**
   * legalIntents is what this seat may send now: from the last Decision
   * event, or the last snapshot (empty before any). A seat that does not
   * decide may only concede.
   */
  get legalIntents(): Intent[] {
    return this.keeper ? [...this.keeper.legalIntents] : [];
  }
  /** reconnects is how many times the session has reconnected. */
  get reconnects(): number {
    return this._reconnects;
  }
  /** clockOffsetMs estimates server time minus local time from ping round trips. */
  get clockOffsetMs(): number {
    return this._offsetMs;
  }
  /** pendingIntents is how many intents await their ServerIntentResult. */
  get pendingIntents(): number {
    return this.pending.length;
  }
  /** err is why the session ended (null while it runs and after leave). */
  get err(): Error | null {
    return this._err;
  }

  /**
   * consistency is how many snapshots were compared with the local Board
   * (same eventSeq), how many with the view kept from events (only once the
   * server has sent a Decision event), and every
   * difference found (at most 32).
   */
  consistency(): { checked: number; viewChecked: number; mismatches: string[] } {
    return { checked: this.checks, viewChecked: this.viewChecks, mismatches: [...this.mismatches] };
  }

  /**
   * sendIntent sends an intent with a fresh intentId and returns the id. The
   * intent is kept until its result arrives and re-sent, with the same id,
   * after a reconnect; so it is not lost while the session reconnects.
   */
  sendIntent(intent: Intent): string {
    if (this.ended) throw new SessionError("Closed", "client: session closed");
    const body: ClientIntent["body"] = { intentId: newIntentId(), basedOnSeq: this._lastSeq, intent };
    this.pending.push(body);
    if (this.ws && this._state === "open") this.send(this.ws, { key: 1, type: "ClientIntent", body });
    return body.intentId;
  }

  /**
   * resync asks for the events after lastSeq, or a full snapshot. It throws
   * NotConnected while the session is (re)connecting; the hello of the next
   * connection brings the missed state anyway.
   */
  resync(full: boolean): void {
    if (!this.ws || this._state !== "open") throw new SessionError("NotConnected", "client: not connected");
    this.send(this.ws, { key: 2, type: "ClientResync", body: { fromSeq: this._lastSeq + 1, fullSnapshot: full } });
  }

  /** leave sends ClientLeave, waits for the server to close (at most timeoutMs) and ends the session; err stays null. */
  async leave(reason: string, timeoutMs = 5_000): Promise<void> {
    if (this.ended) return;
    this.leaving = true;
    const ws = this.ws;
    if (!ws || this._state !== "open") {
      this.close();
      return;
    }
    this.send(ws, { key: 5, type: "ClientLeave", body: { reason } });
    let t: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([this.done, new Promise((r) => (t = setTimeout(r, timeoutMs)))]);
    clearTimeout(t);
    if (!this.ended) this.close();
  }

  /**
   * drop closes the current connection the way a network failure would,
   * without ClientLeave; the session reconnects and resumes. For tests and
   * chaos play.
   */
  drop(): void {
    const ws = this.ws;
    if (!ws) return;
    this.connectionLost(ws, new CloseError(1006, "dropped by the client"));
    if (ws.terminate) ws.terminate();
    else ws.close(4000, "drop");
  }

  /** close ends the session at once. */
  close(): void {
    if (this.ended) return;
    const ws = this.ws;
    this.finish(this.leaving ? null : new SessionError("Closed", "client: session closed"));
    if (ws) {
      try {
        ws.close(1000);
      } catch {
        // ending anyway
      }
    }
  }

  // ------------------------------------------------------------ internals

  private setState(s: SessionState): void {
    if (this._state === s) return;
    this._state = s;
    for (const l of this.stateListeners) {
      try {
        l(s);
      } catch (e) {
        this.cfg.log?.("client: state listener threw", { err: String(e) });
      }
    }
  }

  private deliver(f: ServerFrame): void {
    for (const l of this.frameListeners) {
      try {
        l(f);
      } catch (e) {
        this.cfg.log?.("client: frame listener threw", { err: String(e) });
      }
    }
  }

  private finish(err: Error | null): void {
    if (this.ended) return;
    this.ended = true;
    this.resumeTicket = null;
    this._err = this.leaving && !(err instanceof SessionError && err.code === "Replaced") ? null : err;
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    this.ws = null;
    if (this.connecting) {
      try {
        this.connecting.close();
      } catch {
        // ending anyway
      }
      this.connecting = null;
    }
    for (const w of this.wakeups) w();
    this.setState("closed");
    this.resolveDone(this._err);
  }

  private send(ws: WebSocketLike, f: ClientFrame): void {
    const b = encodeClientFrame(f);
    if (ws.readyState !== WS_OPEN) return; // the close handler reconnects and re-sends
    ws.send(b);
    this.lastSent = Date.now();
    if (this.cfg.onWire) {
      const logged = f.type === "ClientHello" ? { ...f, body: { ...f.body, ticket: "…" } } : f;
      this.cfg.onWire({ dir: "out", frame: logged, bytes: b.length, at: this.lastSent });
    }
  }

  /** sleep waits ms, or less when the session ends. */
  private sleep(ms: number): Promise<void> {
    if (ms <= 0) return Promise.resolve();
    return new Promise((resolve) => {
      const wake = () => {
        clearTimeout(t);
        this.wakeups.delete(wake);
        resolve();
      };
      const t = setTimeout(wake, ms);
      this.wakeups.add(wake);
    });
  }

  /**
   * connect makes attempts until one completes the handshake, or maxAttempts
   * fail in a row. The first attempt uses the resume ticket if the session
   * holds a live one; its refusal (4401) is followed by an attempt with a
   * fresh ticket at once, neither waiting nor counting against maxAttempts.
   */
  private async connect(): Promise<void> {
    let last: unknown;
    let attempt = 0;
    let wait = true;
    for (; this.cfg.maxAttempts < 0 || attempt < this.cfg.maxAttempts; attempt++) {
      const b = this.cfg.backoffMs;
      if (wait) await this.sleep(b[Math.min(attempt, b.length - 1)]!);
      wait = true;
      if (this.ended) throw new SessionError("Closed", "client: session closed");
      const resume = this.takeResumeTicket();
      try {
        await this.attempt(resume);
        return;
      } catch (e) {
        last = e;
        if (this.ended) throw new SessionError("Closed", "client: session closed", e);
        if (resume !== null && e instanceof CloseError && e.code === CloseTicket) {
          // Used, expired by the server's clock, or from a key the node no
          // longer has: only the ticket failed, so a fresh one goes at once.
          this.cfg.log?.("client: resume ticket refused; trying a fresh ticket", { err: String(e) });
          attempt--;
          wait = false;
          continue;
        }
        if (fatalClose(e) || e instanceof TicketRefused) {
          throw new SessionError("Rejected", `client: rejected by the server: ${String(e)}`, e);
        }
        // A session that was watching may be refused because of its own
        // lost connection, which the match counts until the server notices
        // it is gone: that is a failed attempt.
        if (spectatorsFull(e) && !this.everOpen) throw spectatorsFullError(e);
        this.cfg.log?.("client: connection attempt failed", { attempt: attempt + 1, err: String(e) });
      }
    }
    if (spectatorsFull(last)) throw spectatorsFullError(last, attempt);
    throw new SessionError("GaveUp", `client: could not connect after ${attempt} attempts: ${String(last)}`, last);
  }

  /**
   * takeResumeTicket returns the held resume ticket if it is still valid by
   * the server's clock with a margin, or null, and forgets it either way:
   * a ticket is single use, so even a failed attempt has spent it.
   */
  private takeResumeTicket(): string | null {
    const r = this.resumeTicket;
    this.resumeTicket = null;
    if (!r) return null;
    const serverNow = Date.now() + this._offsetMs;
    return Number(r.expiresAtMs) - RESUME_TICKET_MARGIN_MS > serverNow ? r.ticket : null;
  }

  /** attempt gets a ticket (unless given the resume ticket), dials, says hello and waits for ServerHello. */
  private async attempt(resume: string | null): Promise<void> {
    const ticket = resume ?? (await this.cfg.ticket());
    if (this.ended) throw new SessionError("Closed", "client: session closed");
    const ws = new this.WS(this.cfg.url);
    ws.binaryType = "arraybuffer";
    this.connecting = ws;
    await new Promise<void>((resolve, reject) => {
      let helloDone = false;
      let lastFatal: ServerError["body"] | undefined;
      const timeout = setTimeout(() => {
        fail(new Error(`client: no ServerHello within ${this.cfg.readTimeoutMs} ms`));
      }, this.cfg.readTimeoutMs);
      const fail = (e: unknown) => {
        if (helloDone) return;
        helloDone = true; // no more frames from this socket
        clearTimeout(timeout);
        ws.onmessage = ws.onclose = ws.onerror = ws.onopen = null;
        try {
          ws.close();
        } catch {
          // the attempt failed anyway
        }
        reject(e);
      };
      ws.onopen = () => {
        this.send(ws, {
          key: 0,
          type: "ClientHello",
          body: {
            protocolVersion: Version,
            ticket,
            clientBuild: this.cfg.clientBuild,
            resumeFromSeq: this._lastSeq,
            resumeTickets: this.cfg.resumeTickets,
          },
        });
      };
      ws.onerror = () => {
        // The close event follows with the code.
      };
      ws.onclose = (ev) => fail(new CloseError(ev.code, ev.reason, lastFatal));
      ws.onmessage = (ev) => {
        if (helloDone) return;
        let f: ServerFrame;
        try {
          f = this.decode(ev.data);
        } catch (e) {
          fail(e);
          return;
        }
        if (f.type === "ServerError") {
          if (f.body.fatal) lastFatal = f.body;
          return; // a fatal error is followed by the close
        }
        if (f.type !== "ServerHello") {
          fail(new Error(`client: first frame ${f.type}, want ServerHello`));
          return;
        }
        if (this.ended) {
          fail(new SessionError("Closed", "client: session closed"));
          return;
        }
        helloDone = true;
        clearTimeout(timeout);
        // Adopt synchronously: frames right behind the hello may be
        // dispatched before any promise continuation runs.
        this.adopt(ws, f);
        resolve();
      };
    });
  }

  private decode(data: unknown): ServerFrame {
    let bytes: Uint8Array;
    if (data instanceof ArrayBuffer) bytes = new Uint8Array(data);
    else if (ArrayBuffer.isView(data)) bytes = new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
    else throw new Error("client: the server sent a non-binary message");
    const f = decodeServerFrame(bytes);
    this.lastRecv = Date.now();
    if (this.cfg.onWire) {
      const logged = f.type === "ServerResumeTicket" ? { ...f, body: { ...f.body, ticket: "…" } } : f;
      this.cfg.onWire({ dir: "in", frame: logged, bytes: bytes.length, at: this.lastRecv });
    }
    return f;
  }

  /** adopt makes ws the session's connection after its ServerHello, delivers the hello and re-sends unanswered intents. */
  private adopt(ws: WebSocketLike, h: ServerHello): void {
    if (this.everOpen) this._reconnects++;
    this.everOpen = true;
    this.connecting = null;
    this.ws = ws;
    this._seat = h.body.playerIndex;
    this.matchId = h.body.matchId;
    this.keeper?.setMatch(h.body.matchId, h.body.playerIndex);
    this.resyncAsked = false;
    this.lastRecv = Date.now();
    let lastFatal: ServerError["body"] | undefined;
    ws.onmessage = (ev) => {
      if (this.ws !== ws) return;
      let f: ServerFrame;
      try {
        f = this.decode(ev.data);
      } catch (e) {
        // A frame we cannot read: the stream is out of step; start over.
        this.cfg.log?.("client: undecodable server frame; reconnecting", { err: String(e) });
        this.connectionLost(ws, e as Error);
        ws.close(4000, "undecodable frame");
        return;
      }
      if (f.type === "ServerError" && f.body.fatal) lastFatal = f.body;
      this.handle(ws, f);
    };
    ws.onclose = (ev) => this.connectionLost(ws, new CloseError(ev.code, ev.reason, lastFatal));
    ws.onerror = () => {
      // The close event follows.
    };
    this.setState("open");
    this.startTimer();
    this.deliver(h);
    for (const body of [...this.pending]) {
      if (this.ws !== ws) return;
      this.send(ws, { key: 1, type: "ClientIntent", body });
    }
  }

  /** startTimer runs the pinger and the read timeout of the current connection. */
  private startTimer(): void {
    if (this.timer) clearInterval(this.timer);
    const every = Math.max(Math.floor(this.cfg.pingIntervalMs / 4), 10);
    this.timer = setInterval(() => {
      const ws = this.ws;
      if (!ws || this._state !== "open") return;
      const now = Date.now();
      if (now - this.lastRecv > this.cfg.readTimeoutMs) {
        this.cfg.log?.("client: nothing from the server; reconnecting", { ms: now - this.lastRecv });
        this.connectionLost(ws, new CloseError(1006, "read timeout"));
        if (ws.terminate) ws.terminate();
        else ws.close(4000, "read timeout");
        return;
      }
      if (now - this.lastSent < this.cfg.pingIntervalMs) return;
      const nonce = ++this.nonce;
      this.pingSent.set(nonce, now);
      for (const k of this.pingSent.keys()) if (k < nonce - 8) this.pingSent.delete(k);
      this.send(ws, { key: 3, type: "ClientPing", body: { nonce, clientTimeMs: now } });
    }, every);
    // In Node, an idle session must not keep the process alive by itself.
    (this.timer as { unref?: () => void }).unref?.();
  }

  /** connectionLost handles the end of ws (once): finish, or reconnect. */
  private connectionLost(ws: WebSocketLike, err: Error): void {
    if (this.ws !== ws) return;
    this.ws = null;
    ws.onmessage = ws.onclose = ws.onerror = null;
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    if (this.ended) return;
    if (this.leaving) {
      this.finish(null);
      return;
    }
    if (err instanceof CloseError && err.code === CloseReplaced) {
      this.finish(new SessionError("Replaced", `client: session replaced by another connection: ${err.message}`, err));
      return;
    }
    if (fatalClose(err)) {
      this.finish(new SessionError("Rejected", `client: rejected by the server: ${err.message}`, err));
      return;
    }
    if (spectatorsFull(err)) {
      this.finish(spectatorsFullError(err));
      return;
    }
    this.cfg.log?.("client: connection lost; reconnecting", { err: err.message });
    this.setState("reconnecting");
    this.connect().catch((e: unknown) => this.finish(e as Error));
  }

  /** handle processes one frame of the current connection. */
  private handle(ws: WebSocketLike, f: ServerFrame): void {
    switch (f.type) {
      case "ServerPing":
        this.send(ws, { key: 4, type: "ClientPong", body: { nonce: f.body.nonce } });
        return;
      case "ServerPong": {
        const sent = this.pingSent.get(Number(f.body.nonce));
        if (sent !== undefined) {
          this.pingSent.delete(Number(f.body.nonce));
          const rtt = Date.now() - sent;
          this._offsetMs = Number(f.body.serverTimeMs) - (sent + rtt / 2);
        }
        return;
      }
      case "ServerResumeTicket":
        // Kept, not delivered: it is a secret, and only the session uses it.
        // A server that sends one unasked is ignored.
        if (this.cfg.resumeTickets) this.resumeTicket = f.body;
        return;
      case "ServerSnapshot":
        this.takeSnapshot(f.body.view);
        this.deliver(f);
        return;
      case "ServerEvents": {
        const out = this.takeEvents(ws, f);
        if (out) this.deliver(out);
        return;
      }
      case "ServerIntentResult": {
        const i = this.pending.findIndex((p) => p.intentId === f.body.intentId);
        if (i >= 0) this.pending.splice(i, 1);
        this.deliver(f);
        return;
      }
      case "ServerClock":
        this.keeper?.setClock(f.body.clock);
        this.deliver(f);
        return;
      default:
        this.deliver(f);
    }
  }

  private takeSnapshot(v: MatchView): void {
    const fresh = boardFromView(v);
    if (this.boardValid && this._board.eventSeq === fresh.eventSeq) {
      this.checks++;
      for (const d of diffBoards(this._board, fresh)) {
        if (this.mismatches.length < 32) this.mismatches.push(`seq ${fresh.eventSeq}: ${d}`);
      }
    }
    if (this.keeper && this.decisions > 0 && this.keeper.eventSeq === fresh.eventSeq) {
      this.viewChecks++;
      for (const d of this.keeper.diff(v)) {
        if (this.mismatches.length < 32) this.mismatches.push(`seq ${fresh.eventSeq}: ${d}`);
      }
    }
    this.keeper = ViewKeeper.fromSnapshot(v);
    if (this.matchId) this.keeper.setMatch(this.matchId, this._seat);
    this._board = fresh;
    this.boardValid = true;
    this._snapshot = v;
    this._lastSeq = Number(v.eventSeq);
    this.resyncAsked = false;
  }

  /** takeEvents applies a ServerEvents frame: it returns what to deliver (null: nothing new) and asks for a resync on a gap. */
  private takeEvents(ws: WebSocketLike, f: ServerEvents): ServerEvents | null {
    const from = Number(f.body.fromSeq);
    const to = Number(f.body.toSeq);
    if (from > to) return f; // an empty resync answer: up to date
    if (from > this._lastSeq + 1) {
      // Something is missing: ask once; the answer covers this frame.
      if (!this.resyncAsked) {
        this.resyncAsked = true;
        this.send(ws, { key: 2, type: "ClientResync", body: { fromSeq: this._lastSeq + 1, fullSnapshot: false } });
      }
      return null;
    }
    if (to <= this._lastSeq) return null; // all seen
    const events = f.body.events.filter((e) => Number(e.seq) > this._lastSeq);
    if (this.boardValid) {
      for (const e of events) applyEvent(this._board, e);
      this._board.eventSeq = to;
    }
    if (this.keeper) {
      for (const e of events) {
        this.keeper.apply(e);
        if (isDecision(e.event)) this.decisions++;
      }
      this.keeper.setSeq(to);
    }
    const out: ServerEvents = {
      key: f.key,
      type: f.type,
      body: { ...f.body, fromSeq: Math.max(from, this._lastSeq + 1), toSeq: to, events },
    };
    this._lastSeq = to;
    this.resyncAsked = false;
    return out;
  }
}

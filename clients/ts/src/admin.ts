// Admin: a client of the edge's HTTP API (create matches, issue tickets,
// list decks), the counterpart of the Go client's Admin (client/admin.go).
// It needs the admin bearer token: use it from servers and tools, never from
// a page that players load.

import { SeatSpectator } from "./schema.gen.js";

/** PlayerSpec is one player of a new match. */
export interface PlayerSpec {
  name: string;
  deck: string;
}

/** TicketInfo is an issued ticket. The ticket is a bearer token: never log it. */
export interface TicketInfo {
  ticket: string;
  matchId: string;
  seat: number;
  /** expiresAt is Unix milliseconds. */
  expiresAt: number;
}

/** Deck is one entry of GET /api/decks. */
export interface Deck {
  id: string;
  name: string;
  cards: number;
}

/** ApiError is an error answer of the HTTP API. */
export class ApiError extends Error {
  readonly status: number;
  /** code is the machine-readable "error" field ("match_not_found"). */
  readonly code: string;
  constructor(status: number, code: string, message: string) {
    super(`api: HTTP ${status} ${code}: ${message}`);
    this.name = "ApiError";
    this.status = status;
    this.code = code;
  }
}

/** Admin calls the HTTP API of a node at baseUrl ("http://host:port") with the admin token. */
export class Admin {
  private readonly base: string;
  constructor(
    baseUrl: string,
    private readonly token: string,
    private readonly timeoutMs = 10_000,
  ) {
    this.base = baseUrl.replace(/\/+$/, "");
  }

  private async call<T>(method: string, path: string, body?: unknown): Promise<T> {
    const ctl = new AbortController();
    const t = setTimeout(() => ctl.abort(), this.timeoutMs);
    try {
      const headers: Record<string, string> = { Authorization: `Bearer ${this.token}` };
      if (body !== undefined) headers["Content-Type"] = "application/json";
      const resp = await fetch(this.base + path, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: ctl.signal,
      });
      const text = await resp.text();
      if (!resp.ok) {
        let e: { error?: string; message?: string } = {};
        try {
          e = JSON.parse(text) as typeof e;
        } catch {
          // not JSON: status only
        }
        throw new ApiError(resp.status, e.error ?? "", e.message ?? "");
      }
      return JSON.parse(text) as T;
    } catch (e) {
      if (e instanceof ApiError) throw e;
      throw new Error(`api: ${method} ${path}: ${String(e)}`, { cause: e });
    } finally {
      clearTimeout(t);
    }
  }

  /** createMatch creates a match and returns its id; seed (a decimal string, exact beyond 2^53) is optional. */
  async createMatch(players: [PlayerSpec, PlayerSpec], seed?: string | bigint): Promise<string> {
    const req: { players: [PlayerSpec, PlayerSpec]; seed?: string } = { players };
    if (seed !== undefined) req.seed = String(seed);
    const out = await this.call<{ matchId?: string }>("POST", "/api/matches", req);
    if (!out.matchId) throw new Error("api: create match: empty matchId in answer");
    return out.matchId;
  }

  /** ticket issues a ticket for seat of matchId. */
  async ticket(matchId: string, seat: number): Promise<TicketInfo> {
    if (seat === SeatSpectator) {
      // A spectator's ticket has an endpoint of its own (docs/protocol.md §14.1).
      return this.call<TicketInfo>("POST", "/api/game/spectator-tickets", { matchId });
    }
    return this.call<TicketInfo>("POST", "/api/game/tickets", { matchId, seat });
  }

  /** ticketSource returns a TicketSource that issues a fresh ticket on every call, for SessionConfig.ticket. */
  ticketSource(matchId: string, seat: number): () => Promise<string> {
    return async () => (await this.ticket(matchId, seat)).ticket;
  }

  /** decks lists the decks a match can use. */
  async decks(): Promise<Deck[]> {
    return (await this.call<{ decks: Deck[] }>("GET", "/api/decks")).decks;
  }
}

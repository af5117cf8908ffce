// Session behaviour that needs no matchd: backoff and giving up, the fatal
// closes that end a session at once, and resume tickets (the full protocol
// is exercised against a real matchd in matchd.test.ts).
import assert from "node:assert/strict";
import { createServer } from "node:net";
import { test } from "node:test";

import { WebSocketServer } from "ws";

import {
  CloseInternal,
  CloseSpectatorsFull,
  CloseTicket,
  CloseUnsupportedVersion,
  DEFAULT_BACKOFF_MS,
  Session,
  SessionError,
  TicketRefused,
  decodeClientFrame,
  encodeServerFrame,
  newIntentId,
  type ClientHello,
  type ServerFrame,
  type WireEntry,
} from "../src/index.js";

/** freePort returns a loopback port nothing listens on. */
async function freePort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((r) => srv.listen(0, "127.0.0.1", r));
  const port = (srv.address() as { port: number }).port;
  await new Promise<void>((r) => srv.close(() => r()));
  return port;
}

test("the default backoff is the protocol's 0, 2, 10, 30 s", () => {
  assert.deepEqual([...DEFAULT_BACKOFF_MS], [0, 2_000, 10_000, 30_000]);
});

test("intent ids are distinct UUID v4 strings", () => {
  const ids = new Set(Array.from({ length: 1000 }, newIntentId));
  assert.equal(ids.size, 1000);
  for (const id of ids) assert.match(id, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
});

test("start waits out the backoff between attempts, with a fresh ticket each, then gives up", async () => {
  const port = await freePort();
  let tickets = 0;
  const t0 = Date.now();
  await assert.rejects(
    Session.start({
      url: `ws://127.0.0.1:${port}/game`,
      ticket: async () => `t${++tickets}`,
      backoffMs: [0, 150, 300],
      maxAttempts: 3,
    }),
    (e: unknown) => e instanceof SessionError && e.code === "GaveUp",
  );
  const took = Date.now() - t0;
  assert.equal(tickets, 3, "one ticket per attempt");
  assert.ok(took >= 450, `three attempts with 0+150+300 ms of backoff took ${took} ms`);
});

test("a ticket source that fails counts as a failed attempt", async () => {
  let calls = 0;
  await assert.rejects(
    Session.start({
      url: "ws://127.0.0.1:1/game",
      ticket: async () => {
        calls++;
        throw new Error("no ticket today");
      },
      backoffMs: [0, 10],
      maxAttempts: 2,
    }),
    (e: unknown) => e instanceof SessionError && e.code === "GaveUp" && /no ticket today/.test(e.message),
  );
  assert.equal(calls, 2);
});

test("an unsupported-version close rejects at once, without retrying", async () => {
  const wss = new WebSocketServer({ host: "127.0.0.1", port: 0 });
  await new Promise<void>((r) => wss.once("listening", () => r()));
  let hellos = 0;
  wss.on("connection", (ws) => {
    ws.on("message", (data: Buffer) => {
      const f = decodeClientFrame(new Uint8Array(data));
      assert.equal(f.type, "ClientHello");
      hellos++;
      ws.send(
        encodeServerFrame({
          type: "ServerError",
          body: { code: 0, message: "unsupported version", fatal: true, eventSeq: 0 },
        }),
      );
      ws.close(CloseUnsupportedVersion, "unsupported version");
    });
  });
  try {
    const port = (wss.address() as { port: number }).port;
    await assert.rejects(
      Session.start({ url: `ws://127.0.0.1:${port}/game`, ticket: async () => "t", backoffMs: [0, 10, 10], maxAttempts: 3 }),
      (e: unknown) => e instanceof SessionError && e.code === "Rejected",
    );
    assert.equal(hellos, 1, "a rejected hello must not be retried");
  } finally {
    for (const c of wss.clients) c.terminate();
    await new Promise<void>((r) => wss.close(() => r()));
  }
});

test("a refused ticket ends the session at once, at start and while reconnecting", async () => {
  let calls = 0;
  await assert.rejects(
    Session.start({
      url: "ws://127.0.0.1:1/game",
      ticket: async () => {
        calls++;
        throw new TicketRefused("this link no longer works");
      },
      backoffMs: [0, 10],
      maxAttempts: -1,
    }),
    (e: unknown) => e instanceof SessionError && e.code === "Rejected" && e.cause instanceof TicketRefused,
  );
  assert.equal(calls, 1, "a refused ticket must not be asked for again");

  // A server that says hello and then drops the connection: the session
  // reconnects, the ticket source now refuses, and the session ends.
  const wss = new WebSocketServer({ host: "127.0.0.1", port: 0 });
  await new Promise<void>((r) => wss.once("listening", () => r()));
  wss.on("connection", (ws) => {
    ws.on("message", () => {
      ws.send(
        encodeServerFrame({
          type: "ServerHello",
          body: { protocolVersion: 1, matchId: "m1", playerIndex: 0, resumed: false, eventSeq: 0, serverTimeMs: Date.now() },
        }),
      );
      setTimeout(() => ws.terminate(), 20);
    });
  });
  try {
    const port = (wss.address() as { port: number }).port;
    let tickets = 0;
    const s = await Session.start({
      url: `ws://127.0.0.1:${port}/game`,
      ticket: async () => {
        if (++tickets > 1) throw new TicketRefused("bad seat key");
        return "t";
      },
      backoffMs: [0, 10],
      maxAttempts: -1,
    });
    const err = await s.done;
    assert.ok(err instanceof SessionError && err.code === "Rejected", `session ended with ${String(err)}`);
    assert.equal(s.state, "closed");
    assert.equal(tickets, 2);
  } finally {
    for (const c of wss.clients) c.terminate();
    await new Promise<void>((r) => wss.close(() => r()));
  }
});

/**
 * fullServer is a WebSocket server whose first `admit` hellos get a
 * ServerHello as spectator, dropped 20 ms later, and every later one the
 * refusal of a full match: a fatal SpectatorsFull and close 4429.
 */
async function fullServer(admit: number): Promise<{ url: string; hellos: () => number; close: () => Promise<void> }> {
  const wss = new WebSocketServer({ host: "127.0.0.1", port: 0 });
  await new Promise<void>((r) => wss.once("listening", () => r()));
  let hellos = 0;
  wss.on("connection", (ws) => {
    ws.on("message", (data: Buffer) => {
      assert.equal(decodeClientFrame(new Uint8Array(data)).type, "ClientHello");
      if (++hellos <= admit) {
        ws.send(
          encodeServerFrame({
            type: "ServerHello",
            body: { protocolVersion: 1, matchId: "m1", playerIndex: 2, resumed: false, eventSeq: 0, serverTimeMs: Date.now() },
          }),
        );
        setTimeout(() => ws.terminate(), 20);
        return;
      }
      ws.send(encodeServerFrame({ type: "ServerError", body: { code: 10, message: "spectators full", fatal: true, eventSeq: 0 } }));
      ws.close(CloseSpectatorsFull, "spectators full");
    });
  });
  return {
    url: `ws://127.0.0.1:${(wss.address() as { port: number }).port}/game`,
    hellos: () => hellos,
    close: async () => {
      for (const c of wss.clients) c.terminate();
      await new Promise<void>((r) => wss.close(() => r()));
    },
  };
}

test("a full match (close 4429) ends start at once with SpectatorsFull, without retrying", async () => {
  const srv = await fullServer(0);
  try {
    await assert.rejects(
      Session.start({ url: srv.url, ticket: async () => "t", backoffMs: [0, 10], maxAttempts: -1 }),
      (e: unknown) => e instanceof SessionError && e.code === "SpectatorsFull",
    );
    assert.equal(srv.hellos(), 1, "a full match must not be retried by a session never let in");
  } finally {
    await srv.close();
  }
});

test("a watching session refused as full on reconnect keeps trying, then ends with SpectatorsFull", async () => {
  const srv = await fullServer(1);
  try {
    const s = await Session.start({ url: srv.url, ticket: async () => "t", backoffMs: [0, 10], maxAttempts: 3 });
    const err = await s.done;
    assert.ok(err instanceof SessionError && err.code === "SpectatorsFull", `session ended with ${String(err)}`);
    assert.equal(srv.hellos(), 1 + 3, "the refusals count as failed attempts (its own lost connection may hold the place)");
  } finally {
    await srv.close();
  }
});

/** Answer is what ticketServer does with one hello: admit it (sending a resume ticket if given) or refuse it with a close code. */
type Answer = { resume?: { ticket: string; expiresAtMs: number } } | { refuse: number };

/**
 * ticketServer is a WebSocket server that answers hello number i (from 0)
 * as answer(i) says, and records every hello with its arrival time and the
 * time of every refusal.
 */
async function ticketServer(answer: (i: number) => Answer): Promise<{
  url: string;
  hellos: { body: ClientHello["body"]; at: number }[];
  refusedAt: number[];
  close: () => Promise<void>;
}> {
  const wss = new WebSocketServer({ host: "127.0.0.1", port: 0 });
  await new Promise<void>((r) => wss.once("listening", () => r()));
  const hellos: { body: ClientHello["body"]; at: number }[] = [];
  const refusedAt: number[] = [];
  wss.on("connection", (ws) => {
    ws.on("message", (data: Buffer) => {
      const f = decodeClientFrame(new Uint8Array(data));
      if (f.type !== "ClientHello") return; // pings and the like: nothing to check
      const a = answer(hellos.length);
      hellos.push({ body: f.body, at: Date.now() });
      if ("refuse" in a) {
        const code = a.refuse === CloseTicket ? 1 : 7; // InvalidTicket, else Internal
        ws.send(encodeServerFrame({ type: "ServerError", body: { code, message: "refused", fatal: true, eventSeq: 0 } }));
        refusedAt.push(Date.now());
        ws.close(a.refuse, "refused");
        return;
      }
      ws.send(
        encodeServerFrame({
          type: "ServerHello",
          body: { protocolVersion: 1, matchId: "m1", playerIndex: 0, resumed: false, eventSeq: 0, serverTimeMs: Date.now() },
        }),
      );
      if (a.resume) ws.send(encodeServerFrame({ type: "ServerResumeTicket", body: a.resume }));
    });
  });
  return {
    url: `ws://127.0.0.1:${(wss.address() as { port: number }).port}/game`,
    hellos,
    refusedAt,
    close: async () => {
      for (const c of wss.clients) c.terminate();
      await new Promise<void>((r) => wss.close(() => r()));
    },
  };
}

/** waitFor polls cond until it holds, failing after timeoutMs. */
async function waitFor(what: string, cond: () => boolean, timeoutMs = 5_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > end) assert.fail(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

/** gotResumeTicket reports whether the wire log shows a ServerResumeTicket received. */
function gotResumeTicket(wire: WireEntry[]): boolean {
  return wire.some((e) => e.dir === "in" && e.frame.type === "ServerResumeTicket");
}

/** SECRET is the resume ticket the fake server hands out: distinctive, so a leak into a log is found. */
const SECRET = "resume-ticket-secret-1";

/** liveTicket is a resume ticket valid for a minute. */
function liveTicket(): { ticket: string; expiresAtMs: number } {
  return { ticket: SECRET, expiresAtMs: Date.now() + 60_000 };
}

test("the hello asks for resume tickets by default, and not when resumeTickets is false", async () => {
  const srv = await ticketServer(() => ({ resume: liveTicket() }));
  try {
    const on = await Session.start({ url: srv.url, ticket: async () => "fresh", backoffMs: [0] });
    on.close();
    assert.equal(srv.hellos[0]?.body.resumeTickets, true);

    // Off: the hello says false, and a resume ticket the server sends anyway is not used.
    let tickets = 0;
    const wire: WireEntry[] = [];
    const off = await Session.start({
      url: srv.url,
      ticket: async () => `fresh-${++tickets}`,
      backoffMs: [0],
      resumeTickets: false,
      onWire: (e) => wire.push(e),
    });
    try {
      assert.equal(srv.hellos[1]?.body.resumeTickets, false);
      await waitFor("the resume ticket", () => gotResumeTicket(wire));
      off.drop();
      await waitFor("the reconnect", () => srv.hellos.length === 3 && off.state === "open");
      assert.equal(srv.hellos[2]?.body.ticket, "fresh-2");
      assert.equal(tickets, 2);
    } finally {
      off.close();
    }
  } finally {
    await srv.close();
  }
});

test("after a loss the session reconnects with the resume ticket, without asking for one, and never shows it", async () => {
  const srv = await ticketServer((i) => (i === 0 ? { resume: liveTicket() } : {}));
  let tickets = 0;
  const wire: WireEntry[] = [];
  const logged: string[] = [];
  const frames: ServerFrame[] = [];
  const s = await Session.start(
    {
      url: srv.url,
      ticket: async () => `fresh-${++tickets}`,
      backoffMs: [0, 10],
      onWire: (e) => wire.push(e),
      log: (msg, fields) => logged.push(`${msg} ${JSON.stringify(fields ?? {})}`),
    },
    (f) => frames.push(f),
  );
  try {
    await waitFor("the resume ticket", () => gotResumeTicket(wire));
    s.drop();
    await waitFor("the reconnect", () => s.reconnects === 1 && s.state === "open");
    assert.equal(srv.hellos[1]?.body.ticket, SECRET, "the reconnect must use the resume ticket");
    assert.equal(tickets, 1, "no ticket may be asked for when a resume ticket is held");
    assert.ok(!frames.some((f) => f.type === "ServerResumeTicket"), "the resume ticket must not reach the listeners");
    const shown = wire.find((e) => e.frame.type === "ServerResumeTicket");
    assert.equal(shown?.frame.type === "ServerResumeTicket" && shown.frame.body.ticket, "…");
    const leaks = [...wire.map((e) => JSON.stringify(e.frame)), ...logged].filter((l) => l.includes(SECRET));
    assert.deepEqual(leaks, [], "the resume ticket reached a log");
  } finally {
    s.close();
    await srv.close();
  }
});

test("a refused resume ticket (4401) is followed at once by a fresh ticket, not counted as an attempt", async () => {
  const srv = await ticketServer((i) => (i === 0 ? { resume: liveTicket() } : i === 1 ? { refuse: CloseTicket } : {}));
  let tickets = 0;
  const wire: WireEntry[] = [];
  // One attempt allowed, and a first backoff step long enough to see:
  // counting the refusal would give up, waiting for a step would be late.
  const backoff = 500;
  const s = await Session.start({
    url: srv.url,
    ticket: async () => `fresh-${++tickets}`,
    backoffMs: [backoff, 10_000],
    maxAttempts: 1,
    onWire: (e) => wire.push(e),
  });
  try {
    await waitFor("the resume ticket", () => gotResumeTicket(wire));
    s.drop();
    await waitFor("the reconnect", () => s.reconnects === 1 && s.state === "open", 5_000 + backoff);
    assert.equal(srv.hellos.length, 3);
    assert.equal(srv.hellos[1]?.body.ticket, SECRET);
    assert.equal(srv.hellos[2]?.body.ticket, "fresh-2");
    assert.equal(tickets, 2);
    const gap = srv.hellos[2]!.at - srv.refusedAt[0]!;
    assert.ok(gap < backoff - 100, `the fresh attempt came ${gap} ms after the refusal`);
    assert.equal(s.err, null);
  } finally {
    s.close();
    await srv.close();
  }
});

test("a resume attempt that fails otherwise spends the ticket; the next one waits its backoff with a fresh ticket", async () => {
  const srv = await ticketServer((i) => (i === 0 ? { resume: liveTicket() } : i === 1 ? { refuse: CloseInternal } : {}));
  let tickets = 0;
  const wire: WireEntry[] = [];
  const step = 300;
  const s = await Session.start({
    url: srv.url,
    ticket: async () => `fresh-${++tickets}`,
    backoffMs: [0, step],
    maxAttempts: 3,
    onWire: (e) => wire.push(e),
  });
  try {
    await waitFor("the resume ticket", () => gotResumeTicket(wire));
    s.drop();
    await waitFor("the reconnect", () => s.reconnects === 1 && s.state === "open");
    assert.equal(srv.hellos[1]?.body.ticket, SECRET);
    assert.equal(srv.hellos[2]?.body.ticket, "fresh-2");
    const gap = srv.hellos[2]!.at - srv.refusedAt[0]!;
    assert.ok(gap >= step - 50, `the attempt after a 4500 came ${gap} ms after it, before its ${step} ms backoff`);
  } finally {
    s.close();
    await srv.close();
  }
});

test("a resume ticket is used once: the next loss without a new one asks for a ticket", async () => {
  const srv = await ticketServer((i) => (i === 0 ? { resume: liveTicket() } : {}));
  let tickets = 0;
  const wire: WireEntry[] = [];
  const s = await Session.start({
    url: srv.url,
    ticket: async () => `fresh-${++tickets}`,
    backoffMs: [0, 10],
    onWire: (e) => wire.push(e),
  });
  try {
    await waitFor("the resume ticket", () => gotResumeTicket(wire));
    s.drop();
    await waitFor("the first reconnect", () => s.reconnects === 1 && s.state === "open");
    s.drop();
    await waitFor("the second reconnect", () => s.reconnects === 2 && s.state === "open");
    assert.deepEqual(
      srv.hellos.map((h) => h.body.ticket),
      ["fresh-1", SECRET, "fresh-2"],
    );
    assert.equal(tickets, 2);
  } finally {
    s.close();
    await srv.close();
  }
});

test("an expired resume ticket is not used", async () => {
  // 200 ms left is inside the 1 s margin: the hello could arrive too late.
  const srv = await ticketServer((i) => (i === 0 ? { resume: { ticket: SECRET, expiresAtMs: Date.now() + 200 } } : {}));
  let tickets = 0;
  const wire: WireEntry[] = [];
  const s = await Session.start({
    url: srv.url,
    ticket: async () => `fresh-${++tickets}`,
    backoffMs: [0, 10],
    onWire: (e) => wire.push(e),
  });
  try {
    await waitFor("the resume ticket", () => gotResumeTicket(wire));
    s.drop();
    await waitFor("the reconnect", () => s.reconnects === 1 && s.state === "open");
    assert.equal(srv.hellos[1]?.body.ticket, "fresh-2");
    assert.equal(tickets, 2);
  } finally {
    s.close();
    await srv.close();
  }
});

// Session behaviour that needs no matchd: backoff and giving up, and the
// fatal closes that end a session at once (the full protocol is exercised
// against a real matchd in matchd.test.ts).
import assert from "node:assert/strict";
import { createServer } from "node:net";
import { test } from "node:test";

import { WebSocketServer } from "ws";

import {
  CloseSpectatorsFull,
  CloseUnsupportedVersion,
  DEFAULT_BACKOFF_MS,
  Session,
  SessionError,
  TicketRefused,
  decodeClientFrame,
  encodeServerFrame,
  newIntentId,
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

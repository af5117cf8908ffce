// A seeded fuzz run of both decoders: mutated vectors and random bytes must
// either decode or fail with a ProtocolError (never another exception), and
// whatever decodes must re-encode to bytes that decode to the same value.
import assert from "node:assert/strict";
import { test } from "node:test";

import {
  ProtocolError,
  decodeClientFrame,
  decodeServerFrame,
  encodeClientFrame,
  encodeServerFrame,
  type ClientFrame,
  type ServerFrame,
} from "../src/index.js";
import { canon, readVectors, unhex } from "./util.js";

function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const interesting = [0x00, 0x7f, 0x80, 0x90, 0x9f, 0xa0, 0xc0, 0xc1, 0xc2, 0xc3, 0xc4, 0xca, 0xcb, 0xcc, 0xcf, 0xd3, 0xd9, 0xdb, 0xdc, 0xdd, 0xde, 0xdf, 0xe0, 0xff];

function mutate(src: Uint8Array, r: () => number): Uint8Array {
  const b = Array.from(src);
  const n = 1 + Math.floor(r() * 4);
  for (let i = 0; i < n; i++) {
    const at = Math.floor(r() * (b.length + 1));
    switch (Math.floor(r() * 5)) {
      case 0:
        if (b.length) b[at % b.length] = Math.floor(r() * 256);
        break;
      case 1:
        if (b.length) b[at % b.length] = interesting[Math.floor(r() * interesting.length)]!;
        break;
      case 2:
        b.splice(at, 0, interesting[Math.floor(r() * interesting.length)]!);
        break;
      case 3:
        b.splice(at, 1 + Math.floor(r() * 3));
        break;
      default:
        b.length = Math.min(b.length, at);
    }
  }
  return new Uint8Array(b);
}

function check(input: Uint8Array, client: boolean, stats: { ok: number; rejected: number }): void {
  let f: ClientFrame | ServerFrame;
  try {
    f = client ? decodeClientFrame(input) : decodeServerFrame(input);
  } catch (e) {
    if (!(e instanceof ProtocolError)) {
      throw new Error(`input ${Buffer.from(input).toString("hex")}: ${String(e)}`, { cause: e });
    }
    stats.rejected++;
    return;
  }
  stats.ok++;
  const enc = (x: unknown) => (client ? encodeClientFrame(x as ClientFrame) : encodeServerFrame(x as ServerFrame));
  const dec = (b: Uint8Array) => (client ? decodeClientFrame(b) : decodeServerFrame(b));
  const once = enc(f);
  const again = dec(once);
  // Unknown members re-encode with an empty body: compare after one round.
  assert.equal(Buffer.from(enc(again)).toString("hex"), Buffer.from(once).toString("hex"), "re-encoding is not stable");
  if (!canon(f).includes('"Unknown"')) assert.equal(canon(again), canon(f), "decode(encode(x)) differs from x");
}

test("mutated vectors and random bytes never break the decoders", () => {
  const r = rng(20261202);
  const stats = { ok: 0, rejected: 0 };
  const seeds = readVectors().map((v) => unhex(v.hex));
  for (const s of seeds) {
    for (let i = 0; i < 150; i++) {
      const m = mutate(s, r);
      check(m, true, stats);
      check(m, false, stats);
    }
  }
  for (let i = 0; i < 3000; i++) {
    const b = new Uint8Array(Math.floor(r() * 40));
    for (let j = 0; j < b.length; j++) b[j] = Math.floor(r() * 256);
    check(b, true, stats);
    check(b, false, stats);
  }
  // Both outcomes must occur, or the run proves nothing.
  assert.ok(stats.ok > 500, `only ${stats.ok} inputs decoded`);
  assert.ok(stats.rejected > 5000, `only ${stats.rejected} inputs rejected`);
});

test("hostile length claims are rejected without allocating them", () => {
  const cases = [
    "9203dbffffffff", // str32 claiming 4 GiB
    "9203ddffffffff", // array32 claiming 4 Gi elements
    "9202dd7fffffff", // a body claiming 2 Gi fields
    "920293000092dd0fffffff", // ServerEvents.events claiming 268 M envelopes
    "92049201" + "91".repeat(100_000) + "90", // 100 000 nested arrays as a trailing field
  ];
  for (const h of cases) {
    for (const client of [true, false]) {
      const t0 = performance.now();
      assert.throws(() => (client ? decodeClientFrame(unhex(h)) : decodeServerFrame(unhex(h))), ProtocolError);
      assert.ok(performance.now() - t0 < 200, `${h.slice(0, 20)}… took ${performance.now() - t0} ms`);
    }
  }
  assert.throws(() => decodeServerFrame(new Uint8Array(262_145)), (e: unknown) => e instanceof ProtocolError && e.kind === "FrameTooLarge");
});

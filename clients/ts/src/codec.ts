// The wire codec of protocol v1 (docs/protocol.md): frames are MessagePack
// unions [key, body], bodies are arrays in field-key order.
//
// Encoding builds the canonical array tree from the schema and lets
// @msgpack/msgpack write it (it already picks the smallest integer and
// string forms, which is the canonical encoding). Decoding walks the bytes
// itself, like the Go decoder does, because a generic decoder cannot enforce
// the protocol's rules: it turns float 1.0 into the integer 1, replaces
// invalid UTF-8 silently, and does not bound nesting. Every length is checked
// against the bytes left before anything is allocated.

import { Encoder } from "@msgpack/msgpack";

import type { DtoDef, FieldDef, TypeDef, UnionDef } from "./schema.js";
import {
  CLIENT_FRAMES,
  DTOS,
  EVENTS,
  INTENTS,
  MaxArrayLen,
  MaxClientBuildLen,
  MaxDepth,
  MaxFrameBytes,
  MaxIntentIDLen,
  MaxPrintingIDLen,
  MaxReasonLen,
  MaxTicketLen,
  SERVER_FRAMES,
  type ClientFrame,
  type ClientIntent,
  type Event,
  type Intent,
  type ServerFrame,
} from "./schema.gen.js";

/**
 * ProtocolErrorKind classifies codec errors like the Go sentinels:
 * Malformed (ErrMalformed), FrameTooLarge (ErrFrameTooLarge), UnknownIntent
 * (ErrUnknownIntent) and InvalidValue (ErrInvalidValue, encoder only).
 */
export type ProtocolErrorKind = "Malformed" | "FrameTooLarge" | "UnknownIntent" | "InvalidValue";

/** ProtocolError is every error of the codec. The message never quotes a string of the frame. */
export class ProtocolError extends Error {
  /** kind says which class of error this is. */
  readonly kind: ProtocolErrorKind;
  constructor(kind: ProtocolErrorKind, message: string) {
    super(`protocol: ${message}`);
    this.name = "ProtocolError";
    this.kind = kind;
  }

  /**
   * serverAnswer is how the server answers a client frame failing this way:
   * NotSupported (ServerIntentResult, the connection stays) or MalformedFrame
   * (fatal ServerError, close 4400). Undefined for encoder errors.
   */
  get serverAnswer(): "NotSupported" | "MalformedFrame" | undefined {
    switch (this.kind) {
      case "UnknownIntent":
        return "NotSupported";
      case "InvalidValue":
        return undefined;
      default:
        return "MalformedFrame";
    }
  }
}

/**
 * UnknownIntentError: a ClientIntent carried an intent key this codec does
 * not know. frame is the rest of the frame, decoded, with intent null.
 */
export class UnknownIntentError extends ProtocolError {
  /** key is the unknown intent key. */
  readonly key: number | bigint;
  /** frame is the partly decoded ClientIntent (intent is null). */
  readonly frame: Omit<ClientIntent, "body"> & { body: Omit<ClientIntent["body"], "intent"> & { intent: null } };
  constructor(key: number | bigint, frame: UnknownIntentError["frame"]) {
    super("UnknownIntent", `unknown intent key ${key} in ClientIntent`);
    this.name = "UnknownIntentError";
    this.key = key;
    this.frame = frame;
  }
}

// ---------------------------------------------------------------- encoding

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

type Tree = null | boolean | number | bigint | string | Tree[];

const unionTables: Record<string, readonly UnionDef[]> = { Intent: INTENTS, Event: EVENTS };

function byKey(list: readonly UnionDef[]): Map<number, UnionDef> {
  return new Map(list.map((u) => [u.key, u]));
}
function byType(list: readonly UnionDef[]): Map<string, UnionDef> {
  return new Map(list.map((u) => [u.type, u]));
}
const clientByKey = byKey(CLIENT_FRAMES);
const serverByKey = byKey(SERVER_FRAMES);
const unionByKey: Record<string, Map<number, UnionDef>> = { Intent: byKey(INTENTS), Event: byKey(EVENTS) };
const unionByType: Record<string, Map<string, UnionDef>> = {
  Intent: byType(INTENTS),
  Event: byType(EVENTS),
  ClientFrame: byType(CLIENT_FRAMES),
  ServerFrame: byType(SERVER_FRAMES),
};

function invalid(path: string, msg: string): never {
  throw new ProtocolError("InvalidValue", `invalid value: ${path}: ${msg}`);
}

function intTree(v: unknown, path: string): number | bigint {
  if (typeof v === "bigint") {
    if (v < INT64_MIN || v > INT64_MAX) invalid(path, "integer out of int64 range");
    if (v >= BigInt(Number.MIN_SAFE_INTEGER) && v <= BigInt(Number.MAX_SAFE_INTEGER)) return intTree(Number(v), path);
    return v;
  }
  if (typeof v !== "number" || !Number.isInteger(v)) invalid(path, "want an integer");
  if (!Number.isSafeInteger(v)) invalid(path, "integer beyond 2^53: pass a bigint");
  // @msgpack/msgpack (with useBigInt64) writes a bigint as uint64/int64,
  // which is the smallest form beyond the 32-bit ranges.
  if (v > 0xffffffff || v < -0x80000000) return BigInt(v);
  return v;
}

function fieldTree(t: TypeDef, v: unknown, path: string, unboundedList: boolean): Tree {
  switch (t.k) {
    case "int":
      return intTree(v, path);
    case "bool":
      if (typeof v !== "boolean") invalid(path, "want a boolean");
      return v;
    case "string":
      if (typeof v !== "string") invalid(path, "want a string");
      return v;
    case "opt":
      if (v === null || v === undefined) return null;
      return fieldTree(t.of, v, path, false);
    case "list": {
      if (v === undefined || v === null) return [];
      if (!Array.isArray(v)) invalid(path, "want an array");
      if (!unboundedList && v.length > MaxArrayLen) invalid(path, `${v.length} elements, at most ${MaxArrayLen}`);
      return v.map((e, i) => fieldTree(t.of, e, `${path}[${i}]`, false));
    }
    case "fixed": {
      if (!Array.isArray(v) || v.length !== t.n) invalid(path, `want an array of exactly ${t.n}`);
      return v.map((e, i) => fieldTree(t.of, e, `${path}[${i}]`, false));
    }
    case "dto":
      return bodyTree(DTOS[t.name]!.fields, v, path);
    case "union":
      return unionTree(t.name, v, path);
  }
}

function bodyTree(fields: readonly FieldDef[], v: unknown, path: string, owner?: string): Tree[] {
  if (typeof v !== "object" || v === null || Array.isArray(v)) invalid(path, "want an object");
  const o = v as Record<string, unknown>;
  return fields.map((f) =>
    fieldTree(f.t, o[f.name], `${path}.${f.name}`, owner === "ServerEvents" && f.name === "events"),
  );
}

function unionTree(name: string, v: unknown, path: string): Tree {
  if (typeof v !== "object" || v === null) invalid(path, `want an ${name}`);
  const u = v as { key?: unknown; type?: unknown; body?: unknown };
  let def: UnionDef | undefined;
  if (typeof u.key === "number") {
    def = unionByKey[name]!.get(u.key);
    if (!def) {
      if (u.type !== "Unknown" || !Number.isInteger(u.key)) invalid(path, `unknown ${name} key ${u.key}`);
      return [u.key, []]; // re-encoding an unknown member: its body was not kept
    }
  } else if (typeof u.key === "bigint") {
    // A key past 2^53 decodes as a bigint; no known member has one.
    if (u.type !== "Unknown") invalid(path, `unknown ${name} key ${u.key}`);
    return [u.key, []];
  } else if (typeof u.type === "string") {
    def = unionByType[name]!.get(u.type);
  }
  if (!def) invalid(path, `unknown ${name}`);
  if (u.type !== undefined && u.type !== def.type) invalid(path, `key ${def.key} is ${def.type}, not ${String(u.type)}`);
  return [def.key, bodyTree(def.fields, u.body ?? {}, `${path}.${def.type}`)];
}

function frameTree(table: Map<string, UnionDef>, byK: Map<number, UnionDef>, f: unknown, dir: string): Tree {
  if (typeof f !== "object" || f === null) invalid(dir, "want a frame");
  const u = f as { key?: unknown; type?: unknown; body?: unknown };
  const def = typeof u.type === "string" ? table.get(u.type) : typeof u.key === "number" ? byK.get(u.key) : undefined;
  if (!def) invalid(dir, `unknown frame ${String(u.type ?? u.key)}`);
  if (u.key !== undefined && u.key !== def.key) invalid(dir, `${def.type} has key ${def.key}, not ${String(u.key)}`);
  return [def.key, bodyTree(def.fields, u.body, def.type, def.type)];
}

const encoder = new Encoder({ useBigInt64: true });

function finish(tree: Tree): Uint8Array {
  const out = encoder.encode(tree);
  if (out.length > MaxFrameBytes) {
    throw new ProtocolError("FrameTooLarge", `frame too large: ${out.length} bytes, at most ${MaxFrameBytes}`);
  }
  return out;
}

/** A frame to encode may leave out key (it follows from type) or type (it follows from key). */
export type Encodable<F extends { key: number; type: string }> = F extends unknown
  ? Omit<F, "key" | "type"> & Partial<Pick<F, "key" | "type">>
  : never;

/**
 * encodeClientFrame returns the canonical bytes of a client frame. It throws
 * a ProtocolError (InvalidValue) for a value the schema does not allow, and
 * FrameTooLarge beyond MaxFrameBytes. Per-field string limits are not
 * checked (the server checks them).
 */
export function encodeClientFrame(f: ClientFrame | Encodable<ClientFrame>): Uint8Array {
  return finish(frameTree(unionByType.ClientFrame!, clientByKey, f, "client frame"));
}

/** encodeServerFrame returns the canonical bytes of a server frame (tests, tools). */
export function encodeServerFrame(f: ServerFrame | Encodable<ServerFrame>): Uint8Array {
  return finish(frameTree(unionByType.ServerFrame!, serverByKey, f, "server frame"));
}

// ---------------------------------------------------------------- decoding

const strictUTF8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });
const lenientUTF8 = new TextDecoder("utf-8", { fatal: false, ignoreBOM: true });

/** clientLimits are the byte limits of strings in client frames: [min, max]. */
const clientLimits: Record<string, [number, number]> = {
  "ClientIntent.intentId": [1, MaxIntentIDLen],
  "ClientHello.ticket": [0, MaxTicketLen],
  "ClientHello.clientBuild": [0, MaxClientBuildLen],
  "ClientLeave.reason": [0, MaxReasonLen],
  "intent.printingId": [0, MaxPrintingIDLen],
  "intent.discardPrintingId": [0, MaxPrintingIDLen],
};

class Reader {
  pos = 0;
  private readonly dv: DataView;
  /** unknownIntent is set when a ClientIntent carried an unknown intent key. */
  unknownIntent: number | bigint | undefined;

  constructor(
    readonly b: Uint8Array,
    readonly client: boolean,
  ) {
    this.dv = new DataView(b.buffer, b.byteOffset, b.byteLength);
  }

  left(): number {
    return this.b.length - this.pos;
  }

  fail(msg: string, at = this.pos): never {
    throw new ProtocolError("Malformed", `malformed frame: offset ${at}: ${msg}`);
  }

  need(n: number, what: string): void {
    if (n > this.left()) this.fail(`${what}: needs ${n} bytes, ${this.left()} left`);
  }

  byte(what: string): number {
    if (this.pos >= this.b.length) this.fail(`${what}: unexpected end of frame`);
    return this.b[this.pos++]!;
  }

  peek(): number {
    return this.pos < this.b.length ? this.b[this.pos]! : -1;
  }

  u16(): number {
    this.need(2, "length");
    const v = this.dv.getUint16(this.pos);
    this.pos += 2;
    return v;
  }

  u32(): number {
    this.need(4, "length");
    const v = this.dv.getUint32(this.pos);
    this.pos += 4;
    return v;
  }

  /** arrayHeader reads an array header at nesting depth, bounded by max elements. */
  arrayHeader(depth: number, what: string, max = MaxArrayLen): number {
    const at = this.pos;
    const b = this.byte(what);
    let n: number;
    if (b >= 0x90 && b <= 0x9f) n = b & 0x0f;
    else if (b === 0xdc) n = this.u16();
    else if (b === 0xdd) n = this.u32();
    else if (b === 0xc0) return this.fail(`${what}: nil, want an array`, at);
    else return this.fail(`${what}: type 0x${b.toString(16)}, want an array`, at);
    if (depth > MaxDepth) this.fail(`${what}: nesting deeper than ${MaxDepth}`, at);
    if (n > max) this.fail(`${what}: array of ${n} elements, at most ${max}`, at);
    if (n > this.left()) this.fail(`${what}: array of ${n} elements, ${this.left()} bytes left`, at);
    return n;
  }

  /** int reads any MessagePack integer that fits int64: a number, or a bigint beyond 2^53. */
  int(what: string): number | bigint {
    const at = this.pos;
    const b = this.byte(what);
    if (b <= 0x7f) return b;
    if (b >= 0xe0) return b - 0x100;
    const size: Record<number, number> = { 0xcc: 1, 0xcd: 2, 0xce: 4, 0xcf: 8, 0xd0: 1, 0xd1: 2, 0xd2: 4, 0xd3: 8 };
    const n = size[b];
    if (n === undefined) {
      const kind = b === 0xc0 ? "nil" : b === 0xca || b === 0xcb ? "a float" : `type 0x${b.toString(16)}`;
      return this.fail(`${what}: ${kind}, want an integer`, at);
    }
    this.need(n, what);
    const p = this.pos;
    this.pos += n;
    const dv = this.dv;
    switch (b) {
      case 0xcc:
        return dv.getUint8(p);
      case 0xcd:
        return dv.getUint16(p);
      case 0xce:
        return dv.getUint32(p);
      case 0xd0:
        return dv.getInt8(p);
      case 0xd1:
        return dv.getInt16(p);
      case 0xd2:
        return dv.getInt32(p);
      case 0xcf: {
        const v = dv.getBigUint64(p);
        if (v > INT64_MAX) this.fail(`${what}: ${v} does not fit int64`, at);
        return small(v);
      }
      default:
        return small(dv.getBigInt64(p));
    }
  }

  bool(what: string): boolean {
    const at = this.pos;
    const b = this.byte(what);
    if (b === 0xc2) return false;
    if (b === 0xc3) return true;
    return this.fail(`${what}: type 0x${b.toString(16)}, want a bool`, at);
  }

  /** str reads a str value (never bin); limit is [min, max] bytes or undefined. */
  str(what: string, limit?: [number, number]): string {
    const at = this.pos;
    const b = this.byte(what);
    let n: number;
    if (b >= 0xa0 && b <= 0xbf) n = b & 0x1f;
    else if (b === 0xd9) n = this.byte(what);
    else if (b === 0xda) n = this.u16();
    else if (b === 0xdb) n = this.u32();
    else {
      const kind = b === 0xc0 ? "nil" : b >= 0xc4 && b <= 0xc6 ? "bin" : `type 0x${b.toString(16)}`;
      return this.fail(`${what}: ${kind}, want a string`, at);
    }
    if (n > this.left()) this.fail(`${what}: string of ${n} bytes, ${this.left()} left`, at);
    if (limit && (n < limit[0] || n > limit[1])) this.fail(`${what} is ${n} bytes, want ${limit[0]}..${limit[1]}`, at);
    const bytes = this.b.subarray(this.pos, this.pos + n);
    this.pos += n;
    if (!this.client) return lenientUTF8.decode(bytes);
    try {
      return strictUTF8.decode(bytes);
    } catch {
      return this.fail(`${what}: invalid UTF-8`, at);
    }
  }

  /** skip passes over one value of any type at depth, within the limits. */
  skip(depth: number, what: string): void {
    const at = this.pos;
    const b = this.byte(what);
    const skipBytes = (n: number) => {
      if (n > this.left()) this.fail(`${what}: ${n} bytes claimed, ${this.left()} left`, at);
      this.pos += n;
    };
    if (b <= 0x7f || b >= 0xe0 || b === 0xc0 || b === 0xc2 || b === 0xc3) return;
    if (b >= 0xa0 && b <= 0xbf) return skipBytes(b & 0x1f);
    if ((b >= 0x90 && b <= 0x9f) || b === 0xdc || b === 0xdd || (b >= 0x80 && b <= 0x8f) || b === 0xde || b === 0xdf) {
      const isMap = (b >= 0x80 && b <= 0x8f) || b === 0xde || b === 0xdf;
      const n = b <= 0x9f ? b & 0x0f : b === 0xdc || b === 0xde ? this.u16() : this.u32();
      if (depth > MaxDepth) this.fail(`${what}: nesting deeper than ${MaxDepth}`, at);
      if (n > MaxArrayLen) this.fail(`${what}: ${isMap ? "map" : "array"} of ${n} entries, at most ${MaxArrayLen}`, at);
      const items = isMap ? 2 * n : n;
      if (items > this.left()) this.fail(`${what}: ${items} elements claimed, ${this.left()} bytes left`, at);
      for (let i = 0; i < items; i++) this.skip(depth + 1, what);
      return;
    }
    switch (b) {
      case 0xcc:
      case 0xd0:
      case 0xd9: {
        if (b === 0xd9) return skipBytes(this.byte(what));
        return skipBytes(1);
      }
      case 0xcd:
      case 0xd1:
        return skipBytes(2);
      case 0xce:
      case 0xd2:
      case 0xca:
        return skipBytes(4);
      case 0xcf:
      case 0xd3:
      case 0xcb:
        return skipBytes(8);
      case 0xda:
        return skipBytes(this.u16());
      case 0xdb:
        return skipBytes(this.u32());
      case 0xc4:
        return skipBytes(this.byte(what));
      case 0xc5:
        return skipBytes(this.u16());
      case 0xc6:
        return skipBytes(this.u32());
      case 0xd4:
        return skipBytes(2);
      case 0xd5:
        return skipBytes(3);
      case 0xd6:
        return skipBytes(5);
      case 0xd7:
        return skipBytes(9);
      case 0xd8:
        return skipBytes(17);
      case 0xc7:
        return skipBytes(this.byte(what) + 1);
      case 0xc8:
        return skipBytes(this.u16() + 1);
      case 0xc9:
        return skipBytes(this.u32() + 1);
    }
    this.fail(`${what}: type 0x${b.toString(16)} is never used`, at);
  }
}

/** small returns a bigint as a number when it is exact. */
function small(v: bigint): number | bigint {
  return v >= BigInt(Number.MIN_SAFE_INTEGER) && v <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(v) : v;
}

function zero(t: TypeDef): unknown {
  switch (t.k) {
    case "int":
      return 0;
    case "bool":
      return false;
    case "string":
      return "";
    case "opt":
      return null;
    case "list":
      return [];
    case "fixed":
      return Array.from({ length: t.n }, () => zero(t.of));
    case "dto": {
      const o: Record<string, unknown> = {};
      for (const f of DTOS[t.name]!.fields) o[f.name] = zero(f.t);
      return o;
    }
    case "union":
      return undefined; // no zero value: the caller rejects
  }
}

interface Ctx {
  /** owner is the type whose body holds the field ("ClientHello", "Call" ...). */
  owner: string;
  inIntent: boolean;
}

function readField(r: Reader, f: FieldDef, t: TypeDef, depth: number, ctx: Ctx): unknown {
  const what = `${ctx.owner}.${f.name}`;
  switch (t.k) {
    case "int":
      return r.int(what);
    case "bool":
      return r.bool(what);
    case "string": {
      const limit = r.client
        ? (clientLimits[what] ?? (ctx.inIntent ? clientLimits[`intent.${f.name}`] : undefined))
        : undefined;
      return r.str(what, limit);
    }
    case "opt":
      if (r.peek() === 0xc0) {
        r.pos++;
        return null;
      }
      return readField(r, f, t.of, depth, ctx);
    case "list": {
      const unbounded = ctx.owner === "ServerEvents" && f.name === "events";
      const n = r.arrayHeader(depth, what, unbounded ? Math.floor(r.left() / 5) : MaxArrayLen);
      const out: unknown[] = [];
      for (let i = 0; i < n; i++) out.push(readField(r, f, t.of, depth + 1, ctx));
      return out;
    }
    case "fixed": {
      const at = r.pos;
      const n = r.arrayHeader(depth, what);
      if (n !== t.n) r.fail(`${what}: fixed array of ${n} elements, want ${t.n}`, at);
      const out: unknown[] = [];
      for (let i = 0; i < n; i++) out.push(readField(r, f, t.of, depth + 1, ctx));
      return out;
    }
    case "dto": {
      const d: DtoDef = DTOS[t.name]!;
      return readBody(r, d.fields, depth, { owner: d.name, inIntent: ctx.inIntent });
    }
    case "union":
      return readUnion(r, t.name, depth, what);
  }
}

function readBody(r: Reader, fields: readonly FieldDef[], depth: number, ctx: Ctx): Record<string, unknown> {
  const n = r.arrayHeader(depth, `${ctx.owner} body`);
  const o: Record<string, unknown> = {};
  for (let i = 0; i < fields.length; i++) {
    const f = fields[i]!;
    if (i < n) {
      o[f.name] = readField(r, f, f.t, depth + 1, ctx);
      continue;
    }
    const z = zero(f.t);
    if (z === undefined) r.fail(`${ctx.owner}.${f.name} is missing`);
    o[f.name] = z;
  }
  for (let i = fields.length; i < n; i++) r.skip(depth + 1, `${ctx.owner} trailing field ${i}`);
  return o;
}

function readUnion(r: Reader, name: string, depth: number, what: string): unknown {
  const at = r.pos;
  const n = r.arrayHeader(depth, what);
  if (n !== 2) r.fail(`${what}: union of ${n} elements, want [key, body]`, at);
  const key = r.int(`${what} key`);
  const def = typeof key === "number" ? unionByKey[name]!.get(key) : undefined;
  if (!def) {
    r.skip(depth + 1, `${what} body`);
    if (name === "Intent" && r.client) {
      r.unknownIntent = key;
      return null;
    }
    return { key, type: "Unknown", body: null };
  }
  return {
    key: def.key,
    type: def.type,
    body: readBody(r, def.fields, depth + 1, { owner: def.type, inIntent: name === "Intent" }),
  };
}

function decodeFrame(b: Uint8Array, client: boolean): unknown {
  if (b.length > MaxFrameBytes) {
    throw new ProtocolError("FrameTooLarge", `frame too large: ${b.length} bytes, at most ${MaxFrameBytes}`);
  }
  const r: Reader = new Reader(b, client);
  if (b.length === 0) r.fail("empty frame");
  const n = r.arrayHeader(1, "frame");
  if (n !== 2) r.fail(`frame: union of ${n} elements, want [key, body]`, 0);
  const keyAt = r.pos;
  const key = r.int("frame key");
  const def = typeof key === "number" ? (client ? clientByKey : serverByKey).get(key) : undefined;
  if (!def) r.fail(`unknown ${client ? "client" : "server"} frame key ${key}`, keyAt);
  const frame = {
    key: def.key,
    type: def.type,
    body: readBody(r, def.fields, 2, { owner: def.type, inIntent: false }),
  };
  if (r.pos !== b.length) r.fail(`${b.length - r.pos} trailing bytes after the frame`);
  if (r.unknownIntent !== undefined) {
    throw new UnknownIntentError(r.unknownIntent, frame as UnknownIntentError["frame"]);
  }
  return frame;
}

/**
 * decodeServerFrame decodes one server frame (a WebSocket binary message or
 * a TCP frame payload). Unknown events and unknown intents in legalIntents
 * decode to {type: "Unknown", body: null}; anything else out of the schema
 * throws a ProtocolError. The result never aliases b.
 */
export function decodeServerFrame(b: Uint8Array): ServerFrame {
  return decodeFrame(b, false) as ServerFrame;
}

/**
 * decodeClientFrame decodes one client frame with the server's rules (string
 * limits, strict UTF-8). An unknown intent key throws UnknownIntentError
 * holding the rest of the frame. Tools and protocol logs use it.
 */
export function decodeClientFrame(b: Uint8Array): ClientFrame {
  return decodeFrame(b, true) as ClientFrame;
}

type Known<U extends { type: string }> = Exclude<U, { type: "Unknown" }>;

/** makeIntent builds an intent from its type name: makeIntent("Call", {printingId, slot}). */
export function makeIntent<T extends Known<Intent>["type"]>(
  type: T,
  body: Extract<Intent, { type: T }>["body"],
): Extract<Intent, { type: T }> {
  const def = unionByType.Intent!.get(type);
  if (!def) invalid("intent", `unknown intent ${type}`);
  return { key: def.key, type, body } as Extract<Intent, { type: T }>;
}

/** eventVisibility is an event's visibility letter (P, R or O), or undefined for an unknown event. */
export function eventVisibility(e: Event): string | undefined {
  return typeof e.key === "number" ? unionByKey.Event!.get(e.key)?.vis : undefined;
}

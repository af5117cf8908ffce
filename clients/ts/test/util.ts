// Helpers shared by the tests.
import { readFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";

/** repoRoot is the repository root (tests run from build/test). */
export const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), "../../../..");

/** Vector is one entry of protocol/testdata/vectors.json. */
export interface Vector {
  name: string;
  direction: "client" | "server";
  kind: "canonical" | "tolerant" | "reject";
  note?: string;
  hex: string;
  canonicalHex?: string;
  error?: "MalformedFrame" | "NotSupported";
  value?: unknown;
}

/**
 * readVectors parses the vectors file keeping integers beyond 2^53 exact:
 * such literals become bigints (Node 18 has no JSON.parse source access).
 */
export function readVectors(): Vector[] {
  const text = readFileSync(resolve(repoRoot, "protocol/testdata/vectors.json"), "utf8");
  const marked = text.replace(/([:[,]\s*)(-?\d{16,})(?=\s*[,\]}])/g, '$1"__bigint:$2"');
  const doc = JSON.parse(marked, (_k, v) => {
    if (typeof v === "string" && v.startsWith("__bigint:")) {
      const b = BigInt(v.slice(9));
      return b >= BigInt(Number.MIN_SAFE_INTEGER) && b <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(b) : b;
    }
    return v;
  }) as { protocol: number; vectors: Vector[] };
  return doc.vectors;
}

/** hex renders bytes as lower-case hex. */
export function hex(b: Uint8Array): string {
  return Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString("hex");
}

/** unhex parses lower-case hex. */
export function unhex(s: string): Uint8Array {
  return new Uint8Array(Buffer.from(s, "hex"));
}

/** canon renders a value as JSON with bigints marked, keeping key order, for exact comparisons. */
export function canon(v: unknown): string {
  return JSON.stringify(v, (_k, x) => (typeof x === "bigint" ? `${x}n` : x), 1);
}

// Every conformance vector of protocol/testdata/vectors.json, both ways.
import assert from "node:assert/strict";
import { test } from "node:test";

import {
  ProtocolError,
  UnknownIntentError,
  decodeClientFrame,
  decodeServerFrame,
  encodeClientFrame,
  encodeServerFrame,
  type ClientFrame,
  type ServerFrame,
} from "../src/index.js";
import { canon, hex, readVectors, unhex } from "./util.js";

const vectors = readVectors();

function decode(v: { direction: string; hex: string }): unknown {
  const b = unhex(v.hex);
  return v.direction === "client" ? decodeClientFrame(b) : decodeServerFrame(b);
}

function encode(direction: string, value: unknown): string {
  return hex(direction === "client" ? encodeClientFrame(value as ClientFrame) : encodeServerFrame(value as ServerFrame));
}

test("the vectors file covers every kind in both directions", () => {
  assert.ok(vectors.length >= 100, `only ${vectors.length} vectors`);
  for (const dir of ["client", "server"]) {
    for (const kind of ["canonical", "tolerant", "reject"]) {
      assert.ok(
        vectors.some((v) => v.direction === dir && v.kind === kind),
        `no ${dir} ${kind} vector`,
      );
    }
  }
});

for (const v of vectors) {
  test(`vector ${v.name} (${v.direction}, ${v.kind})`, () => {
    switch (v.kind) {
      case "canonical":
        assert.equal(encode(v.direction, v.value), v.hex, "encode(value) must equal hex byte for byte");
        assert.equal(canon(decode(v)), canon(v.value), "decode(hex) must equal value");
        break;
      case "tolerant":
        assert.equal(canon(decode(v)), canon(v.value), "decode(hex) must equal value");
        assert.equal(encode(v.direction, v.value), v.canonicalHex, "encode(value) must equal canonicalHex");
        break;
      case "reject": {
        let err: unknown;
        try {
          decode(v);
        } catch (e) {
          err = e;
        }
        assert.ok(err instanceof ProtocolError, `decoding must fail with a ProtocolError, got ${String(err)}`);
        assert.equal(err.serverAnswer, v.error);
        if (v.error === "NotSupported") {
          assert.ok(err instanceof UnknownIntentError);
          assert.equal(canon(err.frame), canon(v.value));
        }
        break;
      }
      default:
        assert.fail(`unknown vector kind ${String(v.kind)}`);
    }
  });
}

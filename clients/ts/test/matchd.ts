// A real matchd for the tests: built with the Go toolchain from this
// repository, started on loopback ports with the embedded store, killed at
// the end. And a small random player that plays a seat from snapshots.
import { spawn, execFile, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { promisify } from "node:util";

import {
  Session,
  isDecision,
  type Intent,
  type MatchView,
  type ServerFrame,
} from "../src/index.js";
import { repoRoot } from "./util.js";

const run = promisify(execFile);

/** Matchd is one running matchd process. */
export interface Matchd {
  http: string;
  adminToken: string;
  stderrTail(): string;
  stop(): Promise<void>;
}

let built: Promise<string> | undefined;
let builtDir: string | undefined;

/** removeBuild deletes the binary buildMatchd built (a prebuilt MATCHD_BIN is left alone). */
export function removeBuild(): void {
  if (builtDir) rmSync(builtDir, { recursive: true, force: true });
  builtDir = undefined;
  built = undefined;
}

/** buildMatchd builds cmd/matchd once per test process (go caches the rest). */
export function buildMatchd(): Promise<string> {
  // MATCHD_BIN runs a prebuilt binary instead (another branch's, say).
  if (process.env.MATCHD_BIN) return Promise.resolve(process.env.MATCHD_BIN);
  built ??= (async () => {
    const dir = mkdtempSync(join(tmpdir(), "matchd-ts-bin-"));
    builtDir = dir;
    const bin = join(dir, "matchd");
    const go = process.env.GO ?? "go";
    await run(go, ["build", "-o", bin, "./cmd/matchd"], { cwd: repoRoot, maxBuffer: 16 << 20 });
    return bin;
  })();
  return built;
}

/** startMatchd starts a single embedded node with a fresh admin token and waits for its ready line. */
export async function startMatchd(extra: string[] = []): Promise<Matchd> {
  const bin = await buildMatchd();
  const dataDir = mkdtempSync(join(tmpdir(), "matchd-ts-data-"));
  const adminToken = randomBytes(16).toString("hex");
  const args = [
    "--node-name", "ts-e2e",
    "--gossip-addr", "127.0.0.1:0",
    "--remote-addr", "127.0.0.1:0",
    "--listen", "127.0.0.1:0",
    "--data-dir", dataDir,
    "--admin-token", adminToken,
    "--ticket-key", randomBytes(32).toString("hex"),
    "--log-level", "warn",
    ...extra,
  ];
  const child: ChildProcess = spawn(bin, args, { stdio: ["ignore", "pipe", "pipe"] });
  const tail: string[] = [];
  createInterface({ input: child.stderr! }).on("line", (l) => {
    tail.push(l);
    if (tail.length > 100) tail.shift();
  });
  const exited = new Promise<void>((r) => child.once("exit", () => r()));
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    await exited;
    rmSync(dataDir, { recursive: true, force: true });
  };
  const http = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`matchd not ready after 60 s:\n${tail.join("\n")}`)), 60_000);
    createInterface({ input: child.stdout! }).on("line", (l) => {
      const m = /^matchd ready .*\bhttp=(\S+)/.exec(l);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]!);
      }
    });
    void exited.then(() => {
      clearTimeout(timer);
      reject(new Error(`matchd exited before ready:\n${tail.join("\n")}`));
    });
  }).catch(async (e: unknown) => {
    await stop();
    throw e;
  });
  return { http, adminToken, stderrTail: () => tail.join("\n"), stop };
}

/** weight makes random play purposeful enough to end (as the Go bots do). */
function weight(i: Intent): number {
  switch (i.type) {
    case "Concede":
      return 0;
    case "FinishMulligan":
      return 8;
    case "Ride":
      return 20;
    case "Call":
      return 4;
    case "EnterBattle":
      return 6;
    case "Attack":
      return i.body.boosterSlot !== null ? 10 : 6;
    case "ActivateAbility":
    case "Guard":
    case "EndTurn":
      return 2;
    case "PassGuard":
      return 3;
    case "ResolveAbility":
      return i.body.accept ? 3 : 1;
    default:
      return 1;
  }
}

/** PlayerResult is how one seat's match ended. */
export interface PlayerResult {
  final: MatchView;
  intents: number;
  rejected: number;
  duplicates: number;
  /** fromEvents counts decisions taken from the view kept from events, fromSnapshots those taken from a snapshot. */
  fromEvents: number;
  fromSnapshots: number;
}

/** PlayerOptions tune a random player. */
export interface PlayerOptions {
  /** dropAfter drops the connection right after the Nth intent is sent (0: never). */
  dropAfter?: number;
  /** seed makes the choices repeatable. */
  seed: number;
  /** checkEvery asks for a snapshot after every Nth intent result, to compare the kept view with (default 3). */
  checkEvery?: number;
  /** onFrame sees every delivered frame (tests record them). */
  onFrame?: (f: ServerFrame) => void;
}

/** mulberry32 is a tiny seeded PRNG. */
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

const stallAfterMs = 2_000;
const minIntentGapMs = Math.ceil(1000 / 14); // under the 16 intents/s limit

/**
 * playSeat plays s until the match is over, from events: every batch ends
 * with a Decision event (the Decision event, docs/protocol.md), so the session's view holds
 * this seat's legal intents without a snapshot (against a server without
 * Decision events it asks for a snapshot after every intent result). It asks for a snapshot after
 * every checkEvery-th intent result (the session compares it with the kept
 * view), after a resumed hello, after a stall, and at the end; it also acts
 * on a snapshot when it is the decider and nothing is pending.
 */
export function playSeat(s: Session, o: PlayerOptions, subscribe: (l: (f: ServerFrame) => void) => void): Promise<PlayerResult> {
  const rand = rng(o.seed);
  let pending = "";
  let lastSentAt = 0;
  let lastChange = Date.now();
  let lastDecider = -1;
  let snapSeq = -1;
  let intents = 0;
  let rejected = 0;
  let duplicates = 0;
  let results = 0;
  let sawDecision = false;
  let fromEvents = 0;
  let fromSnapshots = 0;
  const checkEvery = o.checkEvery ?? 3;
  const resync = () => {
    try {
      s.resync(true);
    } catch {
      // reconnecting: the hello brings the state
    }
  };
  return new Promise((resolve, reject) => {
    const stall = setInterval(() => {
      if (Date.now() - lastChange > stallAfterMs && pending === "") {
        lastChange = Date.now();
        resync();
      }
    }, stallAfterMs / 2);
    void s.done.then((err) => {
      clearInterval(stall);
      reject(new Error(`seat ${s.seat}: session ended before the match: ${String(err)}`));
    });
    const decide = (legal: Intent[], source: "events" | "snapshot") => {
      const ws = legal.map(weight);
      const total = ws.reduce((a, b) => a + b, 0);
      if (total === 0) return; // not the decider
      let r = Math.floor(rand() * total);
      let pick: Intent | undefined;
      for (let i = 0; i < legal.length; i++) {
        if (r < ws[i]!) {
          pick = legal[i];
          break;
        }
        r -= ws[i]!;
      }
      if (!pick) return;
      if (source === "events") fromEvents++;
      else fromSnapshots++;
      const send = () => {
        pending = s.sendIntent(pick!);
        lastSentAt = Date.now();
        intents++;
        if (o.dropAfter && intents === o.dropAfter) s.drop();
      };
      const wait = minIntentGapMs - (Date.now() - lastSentAt);
      if (wait > 0) {
        pending = "waiting";
        setTimeout(send, wait);
      } else send();
    };
    subscribe((f) => {
      o.onFrame?.(f);
      if (f.type !== "ServerClock") lastChange = Date.now();
      switch (f.type) {
        case "ServerHello":
          if (s.pendingIntents === 0 && pending !== "waiting") pending = "";
          if (f.body.resumed) resync();
          break;
        case "ServerSnapshot": {
          const v = f.body.view;
          snapSeq = v.eventSeq;
          if (v.isFinished) {
            clearInterval(stall);
            resolve({ final: v, intents, rejected, duplicates, fromEvents, fromSnapshots });
            return;
          }
          if (pending === "") decide(v.legalIntents, "snapshot");
          break;
        }
        case "ServerEvents": {
          const decision = f.body.events.some((e) => isDecision(e.event));
          sawDecision ||= decision;
          if (f.body.events.some((e) => e.event.type === "GameFinished")) resync();
          else if (pending === "" && decision) decide(s.legalIntents, "events");
          break;
        }
        case "ServerIntentResult": {
          const mine = f.body.intentId === pending;
          if (mine) pending = "";
          if (f.body.duplicate) duplicates++;
          if (!f.body.accepted && f.body.code !== 3) rejected++;
          // Without Decision events (a server without the Decision event)
          // legal intents come with snapshots only: ask after every result.
          if (!sawDecision || ++results % checkEvery === 0 || !f.body.accepted) resync();
          else if (mine && s.lastSeq >= f.body.eventSeq) decide(s.legalIntents, "events"); // its events came first
          break;
        }
        case "ServerClock":
          if (
            !sawDecision &&
            f.body.clock.decisionPlayer === s.seat &&
            pending === "" &&
            (f.body.clock.decisionPlayer !== lastDecider || snapSeq < s.lastSeq)
          ) {
            resync();
          }
          lastDecider = f.body.clock.decisionPlayer;
          break;
      }
    });
  });
}

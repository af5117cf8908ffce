// A real matchd for the browser tests: built from this repository with the
// Go toolchain ($GO, default go), started on loopback with the embedded
// store and the public play endpoints, killed at the end (or killed as a
// crash would and started again on the same data directory and port).
import { execFile, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

export const repoRoot = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const run = promisify(execFile);

let built;
/**
 * buildMatchd builds cmd/matchd once per process, or takes $MATCHD_BIN,
 * which `npm test` builds once for all test files (`node test/matchd.mjs
 * build DIR`).
 */
function buildMatchd() {
  built ??= process.env.MATCHD_BIN
    ? Promise.resolve(resolve(process.env.MATCHD_BIN))
    : build(mkdtempSync(join(tmpdir(), "matchd-web-bin-")));
  return built;
}

async function build(dir) {
  const bin = join(dir, "matchd");
  await run(process.env.GO ?? "go", ["build", "-o", bin, "./cmd/matchd"], { cwd: repoRoot, maxBuffer: 16 << 20 });
  return bin;
}

if (process.argv[1] === fileURLToPath(import.meta.url) && process.argv[2] === "build") {
  mkdirSync(process.argv[3], { recursive: true });
  console.log(`built ${await build(resolve(process.argv[3]))}`);
}

/**
 * startMatchd starts one embedded node and resolves when it printed its ready
 * line. opts.dataDir and opts.listen ("127.0.0.1:port") start it again where
 * a killed one was; opts.keys false gives it no --admin-token and no
 * --ticket-key, so it keeps its own in its data directory (the token in
 * DATA-DIR/admin-token), as the demo does.
 */
export async function startMatchd(extra = [], opts = {}) {
  const bin = await buildMatchd();
  const dataDir = opts.dataDir ?? mkdtempSync(join(tmpdir(), "matchd-web-data-"));
  const keys = opts.keys ?? true;
  let adminToken = keys ? randomBytes(16).toString("hex") : "";
  const ticketKey = keys ? randomBytes(32).toString("hex") : "";
  const child = spawn(
    bin,
    [
      "--node-name", "web-e2e", "--gossip-addr", "127.0.0.1:0", "--remote-addr", "127.0.0.1:0",
      "--listen", opts.listen ?? "127.0.0.1:0", "--data-dir", dataDir, "--log-level", "warn", "--public-play",
      // Every page of a test file comes from 127.0.0.1, and a file creates
      // matches faster than the default 10 a minute per address allows a
      // player: on a quick machine play.test.mjs's lobby test found its
      // creation refused (429) and waited for a board in vain. A test of the
      // limit itself can pass its own value in extra (the last one counts).
      "--public-creates-per-minute", "600",
      ...(keys ? ["--admin-token", adminToken, "--ticket-key", ticketKey] : []),
      ...extra,
    ],
    { stdio: ["ignore", "pipe", "pipe"] },
  );
  const tail = [];
  createInterface({ input: child.stderr }).on("line", (l) => {
    tail.push(l);
    if (tail.length > 100) tail.shift();
  });
  const exited = new Promise((r) => child.once("exit", r));
  const http = await new Promise((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`matchd not ready after 60 s:\n${tail.join("\n")}`)), 60_000);
    createInterface({ input: child.stdout }).on("line", (l) => {
      const m = /^matchd ready .*\bhttp=(\S+)/.exec(l);
      if (m) {
        clearTimeout(t);
        resolve(m[1]);
      }
    });
    child.once("exit", (code) => reject(new Error(`matchd exited (${code}):\n${tail.join("\n")}`)));
  });
  // A node without --admin-token keeps it in its data directory and never prints it.
  if (!keys) adminToken = readFileSync(join(dataDir, "admin-token"), "utf8").trim();
  const kill = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    await exited;
  };
  return {
    http,
    dataDir,
    get adminToken() {
      return adminToken;
    },
    /** ticketKey is the hex --ticket-key given (empty when the node keeps its own). */
    ticketKey,
    stderrTail: () => tail.join("\n"),
    /** kill ends the process as a crash would and keeps its data directory. */
    kill,
    async stop() {
      await kill();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

// gen-schema writes src/schema.gen.ts from the key tables of docs/protocol.md,
// which the Go package protocol generates from its own types (TestDocsTables).
// So the chain is Go types -> docs tables -> TypeScript types and codec schema,
// and protocol/testdata/vectors.json checks the result byte for byte.
//
//   node scripts/gen-schema.mjs          rewrite src/schema.gen.ts
//   node scripts/gen-schema.mjs --check  exit 1 if src/schema.gen.ts is stale
import { readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const docPath = join(here, "../../../docs/protocol.md");
const outPath = join(here, "../src/schema.gen.ts");

/** tables returns every markdown table under a "### " heading of the generated block. */
function tables(md) {
  const start = md.indexOf("<!-- BEGIN GENERATED");
  const end = md.indexOf("<!-- END GENERATED");
  if (start < 0 || end < 0) throw new Error("docs/protocol.md: generated block not found");
  const out = new Map();
  let heading = "";
  for (const line of md.slice(start, end).split("\n")) {
    if (line.startsWith("### ")) {
      heading = line.slice(4).trim();
      out.set(heading, []);
      continue;
    }
    if (!line.startsWith("|") || /^\|[-| ]+\|$/.test(line)) continue;
    const cells = line
      .replace(/\\\|/g, "\u0000")
      .split("|")
      .slice(1, -1)
      .map((c) => c.replace(/\u0000/g, "|").trim());
    out.get(heading)?.push(cells);
  }
  for (const [k, rows] of out) out.set(k, rows.slice(1)); // drop the header row
  return out;
}

/** parseType turns a docs type ("[5](CardView|nil)", "[]int", "Phase") into a descriptor. */
function parseType(s, enums) {
  s = s.replace(/`/g, "").trim();
  if (s.endsWith("|nil")) return { k: "opt", of: parseType(s.slice(0, -4), enums) };
  if (s.startsWith("(") && s.endsWith(")")) return parseType(s.slice(1, -1), enums);
  let m = /^\[(\d*)\](.+)$/.exec(s);
  if (m) {
    const of = parseType(m[2], enums);
    return m[1] === "" ? { k: "list", of } : { k: "fixed", n: Number(m[1]), of };
  }
  if (s === "int" || s === "int64") return { k: "int" };
  if (s === "bool") return { k: "bool" };
  if (s === "string") return { k: "string" };
  if (s === "Intent" || s === "Event") return { k: "union", name: s };
  if (enums.has(s)) return { k: "int", enum: s };
  if (/^[A-Z][A-Za-z]+$/.test(s)) return { k: "dto", name: s };
  throw new Error(`docs/protocol.md: unknown type ${JSON.stringify(s)}`);
}

/** parseFields reads "0 `a` int; 1 `b` CardRef|nil" (or "—"). */
function parseFields(s, enums, where) {
  s = s.trim();
  if (s.startsWith("—") || s === "") return [];
  return s.split(";").map((part, i) => {
    const m = /^\s*(\d+)\s+`([A-Za-z0-9]+)`\s+(.+?)\s*$/.exec(part);
    if (!m) throw new Error(`docs/protocol.md: ${where}: cannot read field ${JSON.stringify(part)}`);
    if (Number(m[1]) !== i) throw new Error(`docs/protocol.md: ${where}: field key ${m[1]} at position ${i}`);
    return { name: m[2], t: parseType(m[3], enums) };
  });
}

function tsType(t) {
  switch (t.k) {
    case "int":
      return t.enum ?? "number";
    case "bool":
      return "boolean";
    case "string":
      return "string";
    case "opt":
      return `${tsType(t.of)} | null`;
    case "list":
    case "fixed": {
      const el = tsType(t.of);
      const wrapped = el.includes("|") ? `(${el})` : el;
      if (t.k === "list") return `${wrapped}[]`;
      return `[${Array(t.n).fill(el).join(", ")}]`;
    }
    case "dto":
      return t.name;
    case "union":
      return t.name;
  }
  throw new Error(`unknown descriptor ${JSON.stringify(t)}`);
}

function body(fields, indent) {
  if (fields.length === 0) return "Record<string, never>";
  return `{\n${fields.map((f) => `${indent}  ${f.name}: ${tsType(f.t)};`).join("\n")}\n${indent}}`;
}

function generate(md) {
  const t = tables(md);
  const need = (h) => {
    const rows = t.get(h);
    if (!rows) throw new Error(`docs/protocol.md: table "${h}" not found`);
    return rows;
  };
  const enumRows = need("Enums (integers on the wire)");
  const enums = new Map(
    enumRows.map(([name, values]) => [
      name,
      values.split(",").map((v) => {
        const [n, label] = v.trim().split(/\s+/);
        return { value: Number(n), label };
      }),
    ]),
  );
  const union = (h, nameCol, fieldsCol, where) =>
    need(h).map((row) => ({
      key: Number(row[0]),
      type: row[nameCol],
      fields: parseFields(row[fieldsCol], enums, `${where} ${row[nameCol]}`),
      ...(row.length > 4 ? { vis: row[2] } : {}),
    }));
  const clientFrames = union("Client → server frames", 1, 2, "client frame");
  const serverFrames = union("Server → client frames", 1, 2, "server frame");
  const intents = union("Intents (`Intent` = `[intentKey, body]`)", 1, 2, "intent");
  const eventsHeading = [...t.keys()].find((k) => k.startsWith("Events ("));
  const events = union(eventsHeading, 1, 3, "event");
  const dtos = need("Bodies of the other DTOs").map(([name, fields]) => ({
    name: name.replace(/`/g, ""),
    fields: parseFields(fields, enums, `DTO ${name}`),
  }));
  const constants = need("Constants").map(([name, value, meaning]) => ({
    name: name.replace(/`/g, ""),
    value: Number(value),
    // The Go comments may cite documents outside the repository; drop those.
    meaning: meaning.replace(/\s*\([A-Z]+\.md[^)]*\)/g, ""),
  }));

  const L = [];
  L.push("// Code generated by scripts/gen-schema.mjs from docs/protocol.md; DO NOT EDIT.");
  L.push("// Regenerate with `npm run gen` after `go test ./protocol -run TestDocsTables -update`.");
  L.push("");
  L.push('import type { FieldDef, UnionDef, DtoDef } from "./schema.js";');
  L.push("");
  L.push("// ---- enums (integers on the wire) ----");
  for (const [name, values] of enums) {
    L.push("");
    L.push(`/** ${name} values (docs/protocol.md, enums). */`);
    L.push(`export const ${name} = {`);
    for (const v of values) L.push(`  ${v.label}: ${v.value},`);
    L.push("} as const;");
    L.push(`/** ${name} is one of the values of the ${name} object. */`);
    L.push(`export type ${name} = (typeof ${name})[keyof typeof ${name}];`);
  }
  L.push("");
  L.push("// ---- constants ----");
  for (const c of constants) {
    L.push("");
    L.push(`/** ${c.meaning} */`);
    L.push(`export const ${c.name} = ${c.value};`);
  }
  L.push("");
  L.push("// ---- DTOs ----");
  for (const d of dtos) {
    L.push("");
    L.push(`/** ${d.name} (docs/protocol.md, bodies of the other DTOs). */`);
    L.push(`export interface ${d.name} ${body(d.fields, "")}`);
  }
  const unionTypes = (list, suffix, unionName, doc) => {
    const names = [];
    for (const u of list) {
      const n = `${u.type}${suffix}`;
      names.push(n);
      L.push("");
      L.push(`/** ${unionName} ${u.key}: ${u.type}${u.vis ? ` (visibility ${u.vis})` : ""}. */`);
      L.push(`export interface ${n} {\n  key: ${u.key};\n  type: "${u.type}";\n  body: ${body(u.fields, "  ")};\n}`);
    }
    return names;
  };
  L.push("");
  L.push("// ---- client frames ----");
  const cf = unionTypes(clientFrames, "", "Client frame");
  L.push("");
  L.push("/** ClientFrame is every client → server frame. */");
  L.push(`export type ClientFrame =\n  | ${cf.join("\n  | ")};`);
  L.push("");
  L.push("// ---- server frames ----");
  const sf = unionTypes(serverFrames, "", "Server frame");
  L.push("");
  L.push("/** ServerFrame is every server → client frame. */");
  L.push(`export type ServerFrame =\n  | ${sf.join("\n  | ")};`);
  L.push("");
  L.push("// ---- intents ----");
  const it = unionTypes(intents, "Intent", "Intent");
  L.push("");
  L.push("/** UnknownIntent is an intent key this library does not know (decoded from legalIntents; its body was skipped). */");
  L.push("export interface UnknownIntent {\n  key: number;\n  type: \"Unknown\";\n  body: null;\n}");
  L.push("");
  L.push("/** Intent is every intent of protocol v1, plus UnknownIntent. */");
  L.push(`export type Intent =\n  | ${it.join("\n  | ")}\n  | UnknownIntent;`);
  L.push("");
  L.push("// ---- events ----");
  const ev = unionTypes(events, "Event", "Event");
  L.push("");
  L.push("/** UnknownEvent is an event key this library does not know (a newer server); its body was skipped. */");
  L.push("export interface UnknownEvent {\n  key: number;\n  type: \"Unknown\";\n  body: null;\n}");
  L.push("");
  L.push("/** Event is every event of protocol v1, plus UnknownEvent. */");
  L.push(`export type Event =\n  | ${ev.join("\n  | ")}\n  | UnknownEvent;`);
  L.push("");
  L.push("// ---- schema (drives the codec) ----");
  const js = (v) => JSON.stringify(v);
  const schemaUnion = (name, list) => {
    L.push("");
    L.push(`/** ${name} is the wire schema of its union, in key order. */`);
    L.push(`export const ${name}: readonly UnionDef[] = [`);
    for (const u of list) {
      L.push(`  { key: ${u.key}, type: ${js(u.type)}, fields: ${js(u.fields)} as FieldDef[] },`);
    }
    L.push("];");
  };
  schemaUnion("CLIENT_FRAMES", clientFrames);
  schemaUnion("SERVER_FRAMES", serverFrames);
  schemaUnion("INTENTS", intents);
  schemaUnion("EVENTS", events);
  L.push("");
  L.push("/** DTOS is the wire schema of every other DTO, by name. */");
  L.push("export const DTOS: Readonly<Record<string, DtoDef>> = {");
  for (const d of dtos) L.push(`  ${d.name}: { name: ${js(d.name)}, fields: ${js(d.fields)} as FieldDef[] },`);
  L.push("};");
  L.push("");
  return L.join("\n");
}

const text = generate(readFileSync(docPath, "utf8"));
if (process.argv.includes("--check")) {
  let old = "";
  try {
    old = readFileSync(outPath, "utf8");
  } catch {
    // missing: stale
  }
  if (old !== text) {
    console.error("src/schema.gen.ts is stale: run `npm run gen` (docs/protocol.md changed)");
    process.exit(1);
  }
} else {
  writeFileSync(outPath, text);
}

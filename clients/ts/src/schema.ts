// Descriptors of the wire schema. schema.gen.ts holds the tables (generated
// from docs/protocol.md); the codec walks them.

/** TypeDef describes one field's wire type. */
export type TypeDef =
  | { k: "int"; enum?: string }
  | { k: "bool" }
  | { k: "string" }
  | { k: "opt"; of: TypeDef }
  | { k: "list"; of: TypeDef }
  | { k: "fixed"; n: number; of: TypeDef }
  | { k: "dto"; name: string }
  | { k: "union"; name: "Intent" | "Event" };

/** FieldDef is one body field; its wire key is its index in the body. */
export interface FieldDef {
  name: string;
  t: TypeDef;
}

/** UnionDef is one member of a union (frame, intent, event). */
export interface UnionDef {
  key: number;
  type: string;
  fields: FieldDef[];
  /** vis is an event's visibility: P, R or O. */
  vis?: string;
}

/** DtoDef is a DTO that is not a union member (MatchView, CardRef, ...). */
export interface DtoDef {
  name: string;
  fields: FieldDef[];
}

/**
 * @matchgrain/client: the TypeScript client of Matchgrain's match protocol
 * v1 (docs/protocol.md). The codec encodes and decodes frames canonically;
 * Session is a reconnecting session for one seat; Board is the part of a
 * match a client follows from events alone.
 *
 * @packageDocumentation
 */
export * from "./schema.gen.js";
export type { DtoDef, FieldDef, TypeDef, UnionDef } from "./schema.js";
export {
  ProtocolError,
  UnknownIntentError,
  decodeClientFrame,
  decodeServerFrame,
  encodeClientFrame,
  encodeServerFrame,
  eventVisibility,
  makeIntent,
  type Encodable,
  type ProtocolErrorKind,
} from "./codec.js";
export { applyEvent, boardFromView, cloneBoard, diffBoards, emptyBoard, type Board, type BoardPlayer } from "./board.js";
export {
  CloseError,
  DEFAULT_BACKOFF_MS,
  Session,
  SessionError,
  TicketRefused,
  newIntentId,
  type SessionConfig,
  type SessionErrorCode,
  type SessionState,
  type TicketSource,
  type WebSocketConstructor,
  type WebSocketLike,
  type WireEntry,
} from "./session.js";
export { Admin, ApiError, type Deck, type PlayerSpec, type TicketInfo } from "./admin.js";
export { lookupPrinting, printings, type Printing } from "./catalog.js";
export { ViewKeeper, cloneView, isDecision, type DecisionBody } from "./view.js";

// The bundled game's card catalog, for drawing cards and for keeping the
// view from events (a card's printed power and critical).

import { PRINTINGS } from "./catalog.gen.js";
import type { TriggerType, AbilityKey } from "./schema.gen.js";

/** Printing is one card of the catalog, as the server's game package defines it. */
export interface Printing {
  /** id is the printingId, e.g. "S1-001". */
  id: string;
  name: string;
  clan: string;
  grade: number;
  /** power and critical are printed; shield is the guard value (0: none). */
  power: number;
  shield: number;
  critical: number;
  trigger: TriggerType;
  starter: boolean;
  sentinel: boolean;
  /** abilityKey names the card's ability template (0: none). */
  abilityKey: AbilityKey;
}

const byId = new Map<string, Printing>(PRINTINGS.map((p) => [p.id, p]));

/** lookupPrinting returns the printing with id, or undefined. */
export function lookupPrinting(id: string): Printing | undefined {
  return byId.get(id);
}

/** printings returns the whole catalog, sorted by id. */
export function printings(): readonly Printing[] {
  return PRINTINGS;
}

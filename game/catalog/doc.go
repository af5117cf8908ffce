// Package catalog is the starter card catalog: every printing (card design)
// with its stats and typed ability parameters, the two starter decks, and
// the deck construction rules (docs/rules.md §1, §7, §12). It is data and
// validation only, so a client reads the card table without linking the
// rules engine (package game), which builds its own flat tables from it.
//
// The tables are Go literals validated when the package loads: an
// inconsistent catalog is a programming error every test run catches.
// Any change to them changes the rules version matches pin (actors.GameRules).
package catalog

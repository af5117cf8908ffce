// Package game is the rules engine of the card game (docs/rules.md): a
// pure, deterministic state machine in which (seed, deck lists, command log)
// always yields byte-identical events, views and state, and a refused command
// changes nothing.
//
// The engine does no I/O, reads no clock, starts no goroutines and never
// iterates a map on a path that affects the outcome. Its only randomness is
// one PCG (math/rand/v2) per match, of which only Uint64 is consumed, with
// Lemire bounded integers and Fisher–Yates shuffles implemented here, in the
// normative order of docs/rules.md §13. The RNG state is part of MarshalState.
//
// A match is driven like this (the match grain in package actors does it):
//
//	e, events, err := game.New(seed, [2][]string{listA, listB})
//	// ... persist and send events ...
//	for !e.IsFinished() {
//		view := e.View(e.Decider())        // what the decider may do: view.LegalIntents
//		events, err = e.Execute(e.Decider(), intent)
//		// err is a *Rejection: nothing changed
//	}
//	events = e.Finish(loser, protocol.FinishConceded) // server-decided ends
//
// Commands are protocol.Intent values, events are protocol.Event values with
// global seq numbers assigned here, and views are per-player
// protocol.MatchView projections; ProjectEvent gives the per-player form of
// an event. The engine stops only at decisions: the phase decisions (mulligan,
// ride, main, attack, guard) and the pending ones (Trigger, Order, Ability,
// Choice), which are raised only when they have at least two options.
//
// Event-complete invariant (docs/protocol.md §13):
// every accepted command appends at least one event, and a seat's view is a
// pure function of (match, eventSeq, seat). Every batch (New, Execute,
// Finish) ends with a protocol.DecisionEvent, built from the final state of
// the batch: the decider, its open decision and legal commands, the trigger
// and battle views and every unit whose power, critical, rested or face
// state is not its printed one. A finished match's last batch ends with a
// Decision of nobody (-1) followed by GameFinished. ProjectEvent gives the
// other seat a copy without the decider's parts and without face-down units
// it may not see, so a client keeps its whole view from events alone.
//
// The starter catalog (two 50-card decks) is a typed Go table validated at
// init; Decks, DeckList, Printings and LookupPrinting expose it.
package game

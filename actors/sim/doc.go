// Package sim is the deterministic simulator of the match grain: it runs
// the grain's Core (actors/core.go) for one match at a time on a few
// virtual members, against an in-memory store with the real stores' fencing
// rules (Store, checked by persistence/storetest), with two players, a
// network and a clock that are all virtual, so that one seed drives every
// choice and replays a run step for step.
//
// The seed switches fault points on and says how often they strike: store
// calls that fail, lose their reply after committing, or find the store
// down; members that crash (their memory lost) or freeze and wake up stale
// after the match moved, also between an append landing and its answer (so
// the step's result and events follow another member's takeover); requests
// and replies lost, delayed past others or delivered twice; pushes from a
// grain to a seat delayed, but in order and never lost while the
// connection lives (protoactor's guarantee between live members); players
// that cut their connection, take their seat over from a new one, resume,
// re-send, think past their decision time or leave for good (also while
// the other decides, so that absence ends the match); one match in five
// has a bot seat. Faults stop at a point the seed picks, so that
// liveness can be checked.
//
// A store answer is an input of the core (actors/storecall.go), so store
// calls take time too: most are answered at once, with an outcome (fail,
// lose the reply, stall the caller), but while faults run one in twenty is
// slow in the seeds that switch it on: its request and its answer each
// take up to 3.6 s, or 7.2 to 8 s, or are lost, and the store timeout (5 s)
// races the answer, so a write may land after its caller gave up on it, or
// after another member's claim. The member's mailbox waits for the answer, as
// protoactor's does; its peers, timers, players and the store go on.
//
// The invariants are checked after every step and at the end: an intent is
// acknowledged only once durable, and every acknowledged intent is in the
// log at the event seq acknowledged (nothing acknowledged is lost); no
// intent lands in the log twice; no write lands under a superseded epoch;
// every event a seat saw is the durable one as that seat may see it
// (redaction included) and a seat's stream never goes back; a seat's view
// is the fold of its events; a player's newest connection is never
// detached or refused by a stale attach of an older one; a seat that
// resumes after the end gets the events it missed, not a snapshot, unless
// the log could not be read back, and every seat still playing learns why
// the match ended; decision clocks and absence never fire early, and once
// faults have long stopped nothing happens after a decision deadline but
// its timeout; absence never fires late either: a seat absent past its
// limit is judged at that instant, unless something disturbed the
// activation meanwhile (a crash, a freeze, a move, a slow or failed store
// call); once faults stop, every match finishes and is marked finished.
//
// TestSimulation runs 10,000 matches (SIM_MATCHES or -sim.matches more;
// make simulate runs a million) on every core, independent seeds in
// parallel; a failure prints its seed, and
//
//	go test ./actors/sim -run 'TestSimulation$' -seed N -v
//
// replays that match alone with its trace. TestMutations plants known bugs
// (actors/internal/mutate) and shows that a run catches each; the seeds at
// which the simulator found bugs in the grain are kept in
// TestSimulationRegressions.
package sim

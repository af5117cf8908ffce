package actors

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/matchgrain/matchgrain/persistence"
)

// A core never calls its store: a step that needs the store ends with a
// Ready whose Store is set, and the core goes on with the step when its
// host gives the answer back (Core.StoreDone). The host holds every other
// input of that core until then, as the protoactor grain's mailbox does
// while the grain waits for its store. So the grain makes the call at once
// and waits, while the simulator (actors/sim) sends it over a virtual
// network: the answer comes late, never, or after another member's call,
// and a timeout may win the race against it.

// StoreOp names the store method a StoreCall calls.
type StoreOp uint8

// The store calls a core makes.
const (
	// StoreClaim: persistence.Store.Claim (MatchID, Owner).
	StoreClaim StoreOp = iota + 1
	// StoreAppend: persistence.Store.Append (MatchID, Epoch, Entries).
	StoreAppend
	// StoreSaveSnapshot: persistence.Store.SaveSnapshot (MatchID, Epoch, Snapshot).
	StoreSaveSnapshot
	// StoreMarkFinished: persistence.Store.MarkFinished (MatchID, Epoch).
	StoreMarkFinished
	// StoreReadLog: persistence.LogReader.ReadLog (MatchID, From, To).
	StoreReadLog
	// StoreConsumeTicket: persistence.Store.ConsumeTicket (TicketID,
	// TicketExpires, Owner as the consumer).
	StoreConsumeTicket
)

var storeOpNames = [...]string{
	StoreClaim: "Claim", StoreAppend: "Append", StoreSaveSnapshot: "SaveSnapshot",
	StoreMarkFinished: "MarkFinished", StoreReadLog: "ReadLog", StoreConsumeTicket: "ConsumeTicket",
}

// String is the store method's name.
func (op StoreOp) String() string {
	if int(op) < len(storeOpNames) && storeOpNames[op] != "" {
		return storeOpNames[op]
	}
	return fmt.Sprintf("StoreOp(%d)", uint8(op))
}

// StoreCall is one store call a core asks its host to make. Only the fields
// its Op names are set. The core owns the value and its slices: the host
// reads them until it calls StoreDone, and keeps no reference after.
type StoreCall struct {
	Op      StoreOp
	MatchID string
	// Epoch fences the writes (Append, SaveSnapshot, MarkFinished).
	Epoch int64
	// Owner is the claiming member (Claim) or the ticket's consumer
	// (ConsumeTicket).
	Owner    string
	Entries  []persistence.LogEntry
	Snapshot persistence.Snapshot
	// From and To bound ReadLog's seqs, both included.
	From, To      int64
	TicketID      string
	TicketExpires time.Time
}

// StoreResult is the answer to a StoreCall: Err, and what the call read
// (Recovery for Claim, Entries for ReadLog).
type StoreResult struct {
	Recovery persistence.Recovery
	Entries  []persistence.LogEntry
	Err      error
}

// errNoLogReader answers a ReadLog the store cannot serve.
var errNoLogReader = errors.New("the store cannot read its log back")

// Do makes the call on s within ctx. It blocks for as long as s does.
func (c *StoreCall) Do(ctx context.Context, s persistence.Store) StoreResult {
	switch c.Op {
	case StoreClaim:
		rec, err := s.Claim(ctx, c.MatchID, c.Owner)
		return StoreResult{Recovery: rec, Err: err}
	case StoreAppend:
		return StoreResult{Err: s.Append(ctx, c.MatchID, c.Epoch, c.Entries)}
	case StoreSaveSnapshot:
		return StoreResult{Err: s.SaveSnapshot(ctx, c.MatchID, c.Epoch, c.Snapshot)}
	case StoreMarkFinished:
		return StoreResult{Err: s.MarkFinished(ctx, c.MatchID, c.Epoch)}
	case StoreReadLog:
		r, ok := s.(persistence.LogReader)
		if !ok {
			return StoreResult{Err: errNoLogReader}
		}
		es, err := r.ReadLog(ctx, c.MatchID, c.From, c.To)
		return StoreResult{Entries: es, Err: err}
	case StoreConsumeTicket:
		return StoreResult{Err: s.ConsumeTicket(ctx, c.TicketID, c.TicketExpires, c.Owner)}
	}
	return StoreResult{Err: fmt.Errorf("store call %v of match %q: unknown operation", c.Op, c.MatchID)}
}

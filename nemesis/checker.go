package nemesis

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/matchgrain/matchgrain/client"
	"github.com/matchgrain/matchgrain/protocol"
)

// StoredEntry is one row of a match's durable log, as far as the checker
// reads it: its seq and epoch, and the intent id of a player's intent.
type StoredEntry struct {
	Seq      int64
	Epoch    int64
	IntentID string // empty: not a player's intent (a server command, a presence change)
	Seat     int
}

// storedPayload is the part of a log entry's payload the checker needs; the
// keys are the grain's (actors/journal.go logEntry), a plain MessagePack map.
type storedPayload struct {
	Kind     uint8  `msgpack:"k"`
	Seat     int    `msgpack:"p"`
	IntentID string `msgpack:"i"`
}

// entryIntent is the kind of a player's accepted intent in the log.
const entryIntent = 1

// Verdict is the checker's findings; the run passes when every count of a
// violation is zero.
type Verdict struct {
	Acknowledged int // intents answered accepted (not as a duplicate)
	Resent       int // acknowledged intents re-sent after the run
	Lost         int // acknowledged, yet missing from the log or not answered as a duplicate with the original seq
	AppliedTwice int // one intent id more than once in one match's log
	Forks        int // one seq acknowledged for two intents, an intent answered two ways, a Board off a snapshot
	LogGaps      int // a match's log missing a seq
	EpochDrops   int // a log entry with a lower epoch than the one before it
	Unfinished   int // matches never seen to finish
	Disagree     int // matches whose seats' final views differ
	Liveness     time.Duration
	Late         int // (heal, match) pairs past the liveness bound
	Problems     []string
}

// violations is the sum of every violation count.
func (v *Verdict) violations() int {
	return v.Lost + v.AppliedTwice + v.Forks + v.LogGaps + v.EpochDrops + v.Unfinished + v.Disagree + v.Late
}

func (v *Verdict) problem(format string, args ...any) {
	if len(v.Problems) < 50 {
		v.Problems = append(v.Problems, fmt.Sprintf(format, args...))
	}
}

// checkHistory judges the history and the stored logs, without the network:
// everything but the re-send and liveness (checkLiveness).
func checkHistory(v *Verdict, h *History, logs map[string][]StoredEntry) {
	byMatch := map[string][]*Op{}
	for _, o := range h.Ops {
		byMatch[o.Match] = append(byMatch[o.Match], o)
	}
	for _, m := range h.Matches {
		ops := byMatch[m.ID]
		seqOwner := map[int64]string{}
		for _, o := range ops {
			if o.Conflict != "" {
				v.Forks++
				v.problem("match %s intent %s: %s", m.ID, o.ID, o.Conflict)
			}
			if !o.Accepted {
				continue
			}
			if !o.Duplicate {
				v.Acknowledged++
			}
			if prev, ok := seqOwner[o.Seq]; ok && prev != o.ID {
				v.Forks++
				v.problem("match %s: seq %d acknowledged for intents %s and %s", m.ID, o.Seq, prev, o.ID)
			}
			seqOwner[o.Seq] = o.ID
		}
		entries := logs[m.ID]
		inLog := map[string]int{}
		gap := false
		for i, e := range entries {
			if e.Seq != int64(i+1) && !gap {
				gap = true
				v.LogGaps++
				v.problem("match %s: log has seq %d where %d belongs", m.ID, e.Seq, i+1)
			}
			if i > 0 && e.Epoch < entries[i-1].Epoch {
				v.EpochDrops++
				v.problem("match %s: log seq %d has epoch %d after epoch %d", m.ID, e.Seq, e.Epoch, entries[i-1].Epoch)
			}
			if e.IntentID != "" {
				key := fmt.Sprintf("%d/%s", e.Seat, e.IntentID)
				inLog[key]++
				if inLog[key] == 2 {
					v.AppliedTwice++
					v.problem("match %s: intent %s of seat %d applied twice", m.ID, e.IntentID, e.Seat)
				}
			}
		}
		for _, o := range ops {
			if o.Accepted && inLog[fmt.Sprintf("%d/%s", o.Seat, o.ID)] == 0 {
				v.Lost++
				v.problem("match %s: acknowledged intent %s (seat %d, seq %d, via m%d) not in the log", m.ID, o.ID, o.Seat, o.Seq, o.Member)
			}
		}
		if len(m.Mismatches) > 0 {
			v.Forks++
			v.problem("match %s: seat's Board disagreed with a snapshot: %s", m.ID, strings.Join(m.Mismatches, "; "))
		}
		a, b := m.Final[0], m.Final[1]
		switch {
		case m.Finished.IsZero() || a == nil || b == nil:
			v.Unfinished++
			v.problem("match %s: not finished: %v", m.ID, m.Err)
		case a.Winner != b.Winner || a.EventSeq != b.EventSeq:
			v.Disagree++
			v.problem("match %s: seats disagree: winner %d/%d, eventSeq %d/%d", m.ID, a.Winner, b.Winner, a.EventSeq, b.EventSeq)
		}
	}
}

// checkLiveness measures, after each heal, how long until every match in
// play accepted an intent again: a match started before the heal and not
// finished by then must have an intent acknowledged after it within bound.
// The window of a heal ends at the next fault (the schedule leaves at least
// the bound between them) or at the end of the run.
func checkLiveness(v *Verdict, h *History, faults []Fault, bound time.Duration, end time.Time) {
	acks := map[string][]time.Time{}
	for _, o := range h.Ops {
		if o.Accepted {
			acks[o.Match] = append(acks[o.Match], o.Answered)
		}
	}
	for _, a := range acks {
		slices.SortFunc(a, func(x, y time.Time) int { return x.Compare(y) })
	}
	for i, f := range faults {
		if f.Healed.IsZero() {
			continue
		}
		windowEnd := end
		if i+1 < len(faults) {
			windowEnd = faults[i+1].Start
		}
		for _, m := range h.Matches {
			if m.Started.IsZero() || !m.Started.Before(f.Healed) || (!m.Finished.IsZero() && m.Finished.Before(f.Healed)) {
				continue
			}
			a := acks[m.ID]
			k := sort.Search(len(a), func(j int) bool { return !a[j].Before(f.Healed) })
			var took time.Duration
			if k < len(a) {
				took = a[k].Sub(f.Healed)
			} else if !m.Finished.IsZero() {
				continue // ended without an intent of its own after the heal (a server-decided end)
			} else {
				took = windowEnd.Sub(f.Healed)
			}
			v.Liveness = max(v.Liveness, took)
			if took > bound {
				v.Late++
				v.problem("match %s: no intent accepted within %v of healing %s (took %v)", m.ID, bound, f, took.Round(time.Millisecond))
			}
		}
	}
}

// readLogs reads every match's log from the store.
func readLogs(ctx context.Context, url string, ids []string) (map[string][]StoredEntry, error) {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return nil, fmt.Errorf("connect to the store: %w", err)
	}
	defer func() { _ = conn.Close(ctx) }() // read-only
	rows, err := conn.Query(ctx, "SELECT match_id, seq, epoch, payload FROM match_log WHERE match_id = ANY($1) ORDER BY match_id, seq", ids)
	if err != nil {
		return nil, fmt.Errorf("read match_log: %w", err)
	}
	logs := map[string][]StoredEntry{}
	for rows.Next() {
		var id string
		var e StoredEntry
		var payload []byte
		if err := rows.Scan(&id, &e.Seq, &e.Epoch, &payload); err != nil {
			return nil, fmt.Errorf("scan match_log: %w", err)
		}
		var p storedPayload
		if err := msgpack.Unmarshal(payload, &p); err != nil {
			return nil, fmt.Errorf("match %s seq %d: decode log entry: %w", id, e.Seq, err)
		}
		if p.Kind == entryIntent {
			e.IntentID, e.Seat = p.IntentID, p.Seat
		}
		logs[id] = append(logs[id], e)
	}
	return logs, rows.Err()
}

// resend re-sends every acknowledged intent of the history on a fresh
// connection per seat, through a random member, and counts those not
// answered as a duplicate with their original seq as lost.
func resend(ctx context.Context, w *workload, v *Verdict) {
	type seatKey struct {
		match string
		seat  int
	}
	bySeat := map[seatKey][]*Op{}
	for _, o := range w.hist.Ops {
		if o.Accepted && !o.Duplicate {
			k := seatKey{o.Match, o.Seat}
			bySeat[k] = append(bySeat[k], o)
		}
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, 32)
	for k, ops := range bySeat {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			var bad []string
			err := retry(ctx, 60*time.Second, func(ctx context.Context) error {
				var err error
				bad, err = resendSeat(ctx, w, k.match, k.seat, ops)
				return err
			})
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				v.Lost += len(ops)
				v.problem("match %s seat %d: re-send failed: %v", k.match, k.seat, err)
				return
			}
			v.Resent += len(ops)
			v.Lost += len(bad)
			for _, b := range bad {
				v.problem("match %s seat %d: %s", k.match, k.seat, b)
			}
		}()
	}
	wg.Wait()
}

// resendSeat re-sends ops of one seat on one connection; it returns the
// intents answered otherwise than duplicate=true at their original seq.
func resendSeat(ctx context.Context, w *workload, match string, seat int, ops []*Op) ([]string, error) {
	ticket, err := w.admin.Ticket(ctx, match, seat)
	if err != nil {
		return nil, fmt.Errorf("ticket: %w", err)
	}
	addr := "ws://" + w.members[w.randomMember()-1].httpAddr() + "/game"
	conn, err := client.Dial(ctx, addr, client.DialOptions{})
	if err != nil {
		return nil, err
	}
	defer func() { _ = conn.Close() }() // the check is done either way
	stop := context.AfterFunc(ctx, func() { _ = conn.Close() })
	defer stop()
	if err := conn.Send(&protocol.ClientHello{ProtocolVersion: protocol.Version, Ticket: ticket.Ticket, ClientBuild: "matchgrain-nemesis-check"}); err != nil {
		return nil, err
	}
	if err := awaitFrame(conn, func(f protocol.ServerFrame) bool { _, ok := f.(*protocol.ServerHello); return ok }); err != nil {
		return nil, fmt.Errorf("hello via %s: %w", addr, err)
	}
	var bad []string
	for _, o := range ops {
		var r *protocol.ServerIntentResult
		for r == nil || r.Code == protocol.RejectRateLimited {
			if r != nil {
				time.Sleep(100 * time.Millisecond) // the edge's rate limit refills
			}
			if err := conn.Send(&protocol.ClientIntent{IntentID: o.ID, Intent: o.Intent}); err != nil {
				return nil, err
			}
			r = nil
			err := awaitFrame(conn, func(f protocol.ServerFrame) bool {
				x, ok := f.(*protocol.ServerIntentResult)
				if ok && x.IntentID == o.ID {
					r = x
				}
				return r != nil
			})
			if err != nil {
				return nil, fmt.Errorf("re-send %s via %s: %w", o.ID, addr, err)
			}
		}
		if !r.Accepted || !r.Duplicate || r.EventSeq != o.Seq {
			bad = append(bad, fmt.Sprintf("intent %s (acknowledged at seq %d via m%d) re-sent: accepted=%v duplicate=%v seq=%d code=%d",
				o.ID, o.Seq, o.Member, r.Accepted, r.Duplicate, r.EventSeq, r.Code))
		}
	}
	return bad, nil
}

// awaitFrame reads frames until done says so, within 10 s.
func awaitFrame(conn *client.Conn, done func(protocol.ServerFrame) bool) error {
	if err := conn.SetReadDeadline(time.Now().Add(10 * time.Second)); err != nil {
		return err
	}
	for {
		f, err := conn.Recv()
		if err != nil {
			return err
		}
		if e, ok := f.(*protocol.ServerError); ok && e.Fatal {
			return errors.New("server error: " + e.Message)
		}
		if done(f) {
			return nil
		}
	}
}

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/matchgrain/matchgrain/persistence/pgtest"
)

// progressWatch notices a match that stops moving while bots play it, and
// then writes down what a diagnosis needs before anything else changes: the
// store's row and log tail of the match, and how every member still running
// sees it (its admin view, the status its grain reports when asked through
// that member, the member's view of the cluster), each node's log lines
// about the match and what the bots said. A chaos test reads Report once
// its bots are done and fails with it; Stalled lets it stop the bots early
// instead of waiting for their timeout.
type progressWatch struct {
	t      *testing.T
	schema string
	after  time.Duration // no new log entry for this long is a stall

	mu      sync.Mutex
	procs   []*proc // every node started, running or not
	bots    map[string][]string
	report  string
	stalled chan struct{}
}

func newProgressWatch(t *testing.T, schema string, after time.Duration) *progressWatch {
	return &progressWatch{t: t, schema: schema, after: after, bots: map[string][]string{}, stalled: make(chan struct{})}
}

// addProc records a node so its view and log are part of a report.
func (w *progressWatch) addProc(p *proc) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.procs = append(w.procs, p)
}

// botLine records one line a bot logged about match id.
func (w *progressWatch) botLine(id, line string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if l := w.bots[id]; len(l) < 200 {
		w.bots[id] = append(l, time.Now().Format("15:04:05.000")+" "+line)
	}
}

// Stalled is closed once a stall was reported.
func (w *progressWatch) Stalled() <-chan struct{} { return w.stalled }

// Report is the diagnosis of the first stall, "" if none.
func (w *progressWatch) Report() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.report
}

// run polls the store every second until ctx ends or a stall is reported.
func (w *progressWatch) run(ctx context.Context) {
	conn, err := pgx.Connect(ctx, pgtest.URL(w.t))
	if err != nil {
		w.t.Errorf("progress watch: connect: %v", err)
		return
	}
	defer func() { _ = conn.Close(context.Background()) }() // read-only connection
	type seen struct {
		seq   int64
		since time.Time
	}
	last := map[string]seen{}
	q := fmt.Sprintf("SELECT match_id, last_seq FROM %s.matches WHERE NOT finished", pgx.Identifier{w.schema}.Sanitize())
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		rows, err := conn.Query(ctx, q)
		if err != nil {
			continue // the test may be ending; the next tick tries again
		}
		now := time.Now()
		var stuck []string
		for rows.Next() {
			var id string
			var seq int64
			if rows.Scan(&id, &seq) != nil {
				continue
			}
			s, ok := last[id]
			if !ok || s.seq != seq {
				last[id] = seen{seq, now}
				continue
			}
			if now.Sub(s.since) > w.after {
				stuck = append(stuck, id)
			}
		}
		rows.Close()
		if len(stuck) > 0 {
			r := w.diagnose(ctx, conn, stuck)
			w.mu.Lock()
			w.report = r
			w.mu.Unlock()
			close(w.stalled)
			return
		}
	}
}

func (w *progressWatch) diagnose(ctx context.Context, conn *pgx.Conn, ids []string) string {
	var b strings.Builder
	w.mu.Lock()
	procs := append([]*proc(nil), w.procs...)
	w.mu.Unlock()
	fmt.Fprintf(&b, "%d match(es) without a new log entry for %v: %v\n", len(ids), w.after, ids)
	var running []*proc
	for _, p := range procs {
		select {
		case <-p.done:
			fmt.Fprintf(&b, "node %s (member %s): exited\n", p.name, p.member)
		default:
			fmt.Fprintf(&b, "node %s (member %s): running, http %s\n", p.name, p.member, p.http)
			running = append(running, p)
		}
	}
	for _, p := range running {
		fmt.Fprintf(&b, "view of %s: %s\n", p.name, adminGet(ctx, p.http, "/api/admin/cluster"))
	}
	schema := pgx.Identifier{w.schema}.Sanitize()
	for _, id := range ids {
		fmt.Fprintf(&b, "\n=== match %s\n", id)
		var owner string
		var epoch, lastSeq int64
		var updated time.Time
		err := conn.QueryRow(ctx, "SELECT owner, epoch, last_seq, updated_at FROM "+schema+".matches WHERE match_id = $1", id).
			Scan(&owner, &epoch, &lastSeq, &updated)
		fmt.Fprintf(&b, "store: owner %s epoch %d last_seq %d updated %s ago (err %v)\n", owner, epoch, lastSeq,
			time.Since(updated).Round(time.Millisecond), err)
		if rows, err := conn.Query(ctx, "SELECT seq, epoch, length(payload) FROM "+schema+".match_log WHERE match_id = $1 ORDER BY seq DESC LIMIT 8", id); err == nil {
			for rows.Next() {
				var seq, e, n int64
				if rows.Scan(&seq, &e, &n) == nil {
					fmt.Fprintf(&b, "  log seq %d epoch %d (%d bytes)\n", seq, e, n)
				}
			}
			rows.Close()
		}
		for _, p := range running {
			fmt.Fprintf(&b, "%s admin view: %s\n", p.name, adminGet(ctx, p.http, "/api/admin/matches/"+id))
		}
		// The grain's own status, as each member routes to it (this may
		// activate it where none runs; it comes last for that reason).
		for _, p := range running {
			fmt.Fprintf(&b, "%s grain status: %s\n", p.name, overviewEntry(ctx, p.http, id))
		}
		w.mu.Lock()
		fmt.Fprintf(&b, "bots:\n  %s\n", strings.Join(w.bots[id], "\n  "))
		w.mu.Unlock()
		for _, p := range procs {
			var lines []string
			for _, l := range strings.Split(p.logTail(), "\n") {
				if strings.Contains(l, id) {
					lines = append(lines, l)
				}
			}
			fmt.Fprintf(&b, "node %s log lines naming the match:\n  %s\n", p.name, strings.Join(lines, "\n  "))
		}
	}
	return b.String()
}

// adminGet returns the body of an admin GET on a node, compacted, or the error.
func adminGet(ctx context.Context, httpAddr, path string) string {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+httpAddr+path, nil)
	if err != nil {
		return err.Error()
	}
	req.Header.Set("Authorization", "Bearer "+testAdminToken)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return err.Error()
	}
	defer func() { _ = res.Body.Close() }()
	body, err := io.ReadAll(io.LimitReader(res.Body, 64<<10))
	if err != nil {
		return err.Error()
	}
	var v any
	if json.Unmarshal(body, &v) == nil {
		if c, err := json.Marshal(v); err == nil {
			body = c
		}
	}
	return fmt.Sprintf("%d %s", res.StatusCode, body)
}

// overviewEntry is the ops console's entry for one match on a node.
func overviewEntry(ctx context.Context, httpAddr, id string) string {
	raw := adminGet(ctx, httpAddr, "/api/admin/matches")
	_, body, ok := strings.Cut(raw, " ")
	if !ok {
		return raw
	}
	var ov struct {
		Matches []json.RawMessage `json:"matches"`
	}
	if err := json.Unmarshal([]byte(body), &ov); err != nil {
		return raw
	}
	for _, m := range ov.Matches {
		if strings.Contains(string(m), id) {
			return string(m)
		}
	}
	return "not listed"
}

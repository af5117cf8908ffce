package main

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/matchgrain/matchgrain/client"
	"github.com/matchgrain/matchgrain/client/bots"
	"github.com/matchgrain/matchgrain/client/clienttest"
	"github.com/matchgrain/matchgrain/cluster/clustertest"
	"github.com/matchgrain/matchgrain/persistence/pgtest"
	"github.com/matchgrain/matchgrain/protocol"
)

// TestRetentionPrunesFinished runs a node whose retention job prunes logs
// of finished matches at once, plays a bot match to its end, and checks that
// the job deletes its log by itself, that the match still answers with its
// final state, and logs the stored bytes of one whole match (the figures in
// docs/operations.md §5).
func TestRetentionPrunesFinished(t *testing.T) {
	schema := pgtest.NewSchema(t)
	p := startProc(t, "r", "--database-url", pgtest.URL(t), "--database-schema", schema,
		"--cluster-name", "retention-"+strconv.FormatInt(time.Now().UnixNano(), 36),
		"--retention-prune-after", "3s", "--retention-interval", "500ms")
	admin := client.NewAdmin("http://"+p.http, testAdminToken, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	seed := uint64(5)
	mr, err := bots.PlayMatch(ctx, admin, bots.MatchOptions{GameAddr: "ws://" + p.http + "/game",
		Decks: [2]string{"S1", "S2"}, Seed: &seed, BotSeed: 5, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatalf("bot match: %v", err)
	}
	conn, err := pgx.Connect(ctx, pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close(ctx) }()
	sch := pgx.Identifier{schema}.Sanitize()
	var entries, logBytes, snapBytes, metaBytes int64
	q := fmt.Sprintf(`SELECT (SELECT count(*) FROM %[1]s.match_log WHERE match_id = $1),
		(SELECT coalesce(sum(pg_column_size(l.*)), 0) FROM %[1]s.match_log l WHERE match_id = $1),
		(SELECT pg_column_size(s.*) FROM %[1]s.match_snapshots s WHERE match_id = $1),
		(SELECT pg_column_size(m.*) FROM %[1]s.matches m WHERE match_id = $1)`, sch)
	if err := conn.QueryRow(ctx, q, mr.ID).Scan(&entries, &logBytes, &snapBytes, &metaBytes); err != nil {
		t.Fatalf("measure: %v", err)
	}
	if entries == 0 {
		t.Fatal("the finished match's log was pruned before the retention age")
	}
	t.Logf("one finished match (%d events): %d log entries, %d bytes of log rows (%d per entry), final snapshot row %d bytes, match row %d bytes (row sizes, before indexes)",
		mr.Results[0].Final.EventSeq, entries, logBytes, logBytes/entries, snapBytes, metaBytes)
	clustertest.Eventually(t, 30*time.Second, 50*time.Millisecond, func() error {
		var n int64
		if err := conn.QueryRow(ctx, fmt.Sprintf("SELECT count(*) FROM %s.match_log WHERE match_id = $1", sch), mr.ID).Scan(&n); err != nil {
			return err
		}
		if n > 0 {
			return fmt.Errorf("%d log entries left", n)
		}
		return nil
	})
	// The finished match still answers with its result and why.
	seat, _ := dialSeat(t, admin, p.http, mr.ID, 0, 0)
	v := clienttest.Await(seat, 20*time.Second, clienttest.Any[*protocol.ServerSnapshot]).View
	final := mr.Results[0].Final
	if !v.IsFinished || v.EventSeq != final.EventSeq || v.Winner != final.Winner ||
		v.FinishReason == nil || final.FinishReason == nil || *v.FinishReason != *final.FinishReason {
		t.Fatalf("pruned match answers finished=%v seq %d winner %d reason %v; it ended at seq %d, winner %d, reason %v",
			v.IsFinished, v.EventSeq, v.Winner, v.FinishReason, final.EventSeq, final.Winner, final.FinishReason)
	}
}

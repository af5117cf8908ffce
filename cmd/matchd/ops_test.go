package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/matchgrain/matchgrain/client/bots"
	"github.com/matchgrain/matchgrain/client/clienttest"
	"github.com/matchgrain/matchgrain/cluster/clustertest"
	"github.com/matchgrain/matchgrain/ops"
	"github.com/matchgrain/matchgrain/persistence/pgtest"
	"github.com/matchgrain/matchgrain/protocol"
)

// matchctl runs the real matchctl binary (built once) and returns its
// stdout and exit code.
func matchctl(t *testing.T, args ...string) ([]byte, int) {
	t.Helper()
	bin := filepath.Join(filepath.Dir(matchdBin(t)), "matchctl")
	if _, err := os.Stat(bin); err != nil {
		if out, err := exec.Command("go", "build", "-o", bin, "../matchctl").CombinedOutput(); err != nil {
			t.Fatalf("build matchctl: %v\n%s", err, out)
		}
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("matchctl %v: %v", args, err)
	}
	if code != 0 {
		t.Logf("matchctl %v exited %d: %s", args, code, stderr.String())
	}
	return stdout.Bytes(), code
}

// TestOpsCommands drives matchctl cluster, match and replay against real
// members on PostgreSQL: a running match shows its owner, epoch, seqs and
// clock; a finished match replays from its log to exactly the stored
// snapshot; a stored snapshot that does not belong to the log makes replay
// fail.
func TestOpsCommands(t *testing.T) {
	cc := startChaosCluster(t)
	server := "http://" + cc.a.http
	auth := []string{"--server", server, "--token", testAdminToken}

	// A finished match, played by bots through the edge.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	seed := uint64(77)
	done, err := bots.PlayMatch(ctx, cc.admin, bots.MatchOptions{GameAddr: "ws://" + cc.edge.http + "/game",
		Decks: [2]string{"S1", "S2"}, Seed: &seed, BotSeed: 7, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatalf("bot match: %v", err)
	}
	// A running match with eight acknowledged moves.
	running := cc.createMatch(t, 9)
	var seats [2]*clienttest.Seat
	for s := range 2 {
		seats[s], _ = dialSeat(t, cc.admin, cc.edge.http, running, s, 0)
		clienttest.Await(seats[s], 20*time.Second, clienttest.Any[*protocol.ServerSnapshot])
	}
	_, lastSeq, _ := play(t, seats, "ops", 8)

	out, code := matchctl(t, append([]string{"match"}, append(auth, running)...)...)
	if code != 0 {
		t.Fatalf("matchctl match exited %d", code)
	}
	var mi ops.MatchInfo
	if err := json.Unmarshal(out, &mi); err != nil {
		t.Fatalf("match output: %v\n%s", err, out)
	}
	owner, epoch := cc.owner(t, running)
	switch {
	case mi.Owner != owner || mi.Epoch != epoch || !mi.OwnerInView:
		t.Fatalf("match: owner %s epoch %d in view %v; store says %s, %d", mi.Owner, mi.Epoch, mi.OwnerInView, owner, epoch)
	case mi.State == nil:
		t.Fatalf("match: no state: %s", mi.StateError)
	case mi.State.EventSeq < lastSeq || mi.State.Finished || mi.LastSeq < 8:
		t.Fatalf("match: event seq %d (last acknowledged %d), log seq %d, finished %v", mi.State.EventSeq, lastSeq, mi.LastSeq, mi.State.Finished)
	case mi.State.Decider != 0 && mi.State.Decider != 1:
		t.Fatalf("match: decider %d in a running match", mi.State.Decider)
	}

	// A member of another build joins (an edge, so no match moves): the
	// answering member must report each member's build as that member
	// states it, not its own.
	otherBin := filepath.Join(t.TempDir(), "matchd-other")
	if out, err := exec.Command("go", "build", "-ldflags=-X main.version=ops-test-other", "-o", otherBin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build the other matchd: %v\n%s", err, out)
	}
	other := startProcOpts(t, "v", procOpts{secrets: true, bin: otherBin}, append(cc.common, "--join", cc.a.gossip, "--edge-only")...)
	var ci ops.ClusterInfo
	clustertest.Eventually(t, 30*time.Second, 50*time.Millisecond, func() error {
		out, code = matchctl(t, append([]string{"cluster"}, auth...)...)
		if code != 0 {
			return fmt.Errorf("matchctl cluster exited %d", code)
		}
		ci = ops.ClusterInfo{}
		if err := json.Unmarshal(out, &ci); err != nil {
			t.Fatalf("cluster output: %v\n%s", err, out)
		}
		if len(ci.Members) != 4 {
			return fmt.Errorf("%d members in a's view, want 4", len(ci.Members))
		}
		return nil
	})
	hosts := 0
	for _, m := range ci.Members {
		if slices.Contains(m.Kinds, "match") {
			hosts++
		}
		if m.ID == owner && m.Matches < 1 {
			t.Fatalf("cluster: owner %s of the running match counts %d matches", owner, m.Matches)
		}
		wantOther := m.ID == other.member
		switch {
		case m.InfoError != "":
			t.Fatalf("cluster: member %s (%s) did not describe itself: %s\n%s", m.ID, m.Address, m.InfoError, out)
		case m.RulesVersion != ci.Version:
			t.Fatalf("cluster: member %s runs rules %q, the answering member %q:\n%s", m.ID, m.RulesVersion, ci.Version, out)
		case strings.HasPrefix(m.Build, "ops-test-other ") != wantOther:
			t.Fatalf("cluster: member %s reports build %q (the other build is member %s):\n%s", m.ID, m.Build, other.member, out)
		}
	}
	for _, m := range ci.Members {
		t.Logf("cluster: member %s rules %s build %q", m.ID, m.RulesVersion, m.Build)
	}
	if hosts != 2 || ci.Version == "" {
		t.Fatalf("cluster: %d hosting matches, version %q; want 2 and a version:\n%s", hosts, ci.Version, out)
	}

	out, code = matchctl(t, append([]string{"replay"}, append(auth, done.ID)...)...)
	if code != 0 {
		t.Fatalf("matchctl replay of a finished match exited %d:\n%s", code, out)
	}
	var rep struct {
		Events            int
		EventSeq          int64
		Finished          bool
		SnapshotSeq       int64
		SnapshotIdentical bool
		FinalIdentical    bool
		EventsSHA256      string
	}
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatalf("replay output: %v\n%s", err, out)
	}
	final := done.Results[0].Final.EventSeq
	if !rep.Finished || rep.EventSeq != final || int64(rep.Events) != final || rep.SnapshotSeq == 0 || !rep.SnapshotIdentical || !rep.FinalIdentical {
		t.Fatalf("replay: %+v; the bots saw the match end at seq %d", rep, final)
	}
	// Replaying again gives the same events, bit for bit.
	again, _ := matchctl(t, append([]string{"replay"}, append(auth, done.ID)...)...)
	if !bytes.Equal(again, out) {
		t.Fatalf("two replays differ:\n%s\n%s", out, again)
	}

	// A snapshot that does not belong to the log (the final state filed
	// under a seq halfway through): replay must say so.
	pctx, pcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer pcancel()
	conn, err := pgx.Connect(pctx, pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close(pctx) }()
	q := fmt.Sprintf(`UPDATE %s.match_snapshots SET seq = seq / 2 WHERE match_id = $1`, pgx.Identifier{cc.schema}.Sanitize())
	if tag, err := conn.Exec(pctx, q, done.ID); err != nil || tag.RowsAffected() != 1 {
		t.Fatalf("move snapshot: %v (%d rows)", err, tag.RowsAffected())
	}
	if _, code := matchctl(t, append([]string{"replay"}, append(auth, done.ID)...)...); code == 0 {
		t.Fatal("replay of a match whose snapshot was moved succeeded")
	}
}

package main

import (
	"context"
	"fmt"
	"regexp"
	"testing"
	"time"

	"github.com/matchgrain/matchgrain/client"
	"github.com/matchgrain/matchgrain/client/clienttest"
	"github.com/matchgrain/matchgrain/cluster/clustertest"
	"github.com/matchgrain/matchgrain/protocol"
)

var printedToken = regexp.MustCompile(`this node's token \(kept in --data-dir\) is ([0-9a-f]+)`)

// tokenPrinted waits for the admin token an embedded node without
// --admin-token prints at start.
func tokenPrinted(t *testing.T, p *proc) string {
	t.Helper()
	var tok string
	clustertest.Eventually(t, 10*time.Second, 20*time.Millisecond, func() error {
		m := printedToken.FindStringSubmatch(p.logTail())
		if m == nil {
			return fmt.Errorf("node %s printed no admin token", p.name)
		}
		tok = m[1]
		return nil
	})
	return tok
}

// TestEmbeddedRestartKeepsKeys kills an embedded node started without
// --ticket-key and --admin-token and starts it again on the same data
// directory, as a demo's player would: the admin token is the same, and a
// ticket issued before the restart (so also every seat link, derived from the
// same key) opens its seat on the restarted node.
func TestEmbeddedRestartKeepsKeys(t *testing.T) {
	dir := t.TempDir()
	first := startProcSecrets(t, "emb", false, "--data-dir", dir)
	tok := tokenPrinted(t, first)
	cc := &chaosCluster{admin: client.NewAdmin("http://"+first.http, tok, nil)}
	id := cc.createMatch(t, 42)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	early, err := cc.admin.Ticket(ctx, id, 1)
	if err != nil {
		t.Fatalf("ticket: %v", err)
	}
	first.kill()

	again := startProcSecrets(t, "emb", false, "--data-dir", dir)
	if got := tokenPrinted(t, again); got != tok {
		t.Fatal("the restarted node made a new admin token")
	}
	conn, err := client.Dial(ctx, "ws://"+again.http+"/game", client.DialOptions{})
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	defer func() { _ = conn.Close() }()
	if err := conn.Send(&protocol.ClientHello{ProtocolVersion: 1, Ticket: early.Ticket, ClientBuild: "restart-test"}); err != nil {
		t.Fatalf("hello: %v", err)
	}
	r := &clienttest.Seat{T: t, Conn: conn}
	h, ok := r.Recv(20 * time.Second).(*protocol.ServerHello)
	if !ok || h.MatchID != id || h.PlayerIndex != 1 {
		t.Fatalf("a ticket issued before the restart: hello %+v, want seat 1 of %s", h, id)
	}
}

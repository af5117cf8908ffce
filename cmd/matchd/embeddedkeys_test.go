package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/matchgrain/matchgrain/client"
	"github.com/matchgrain/matchgrain/client/clienttest"
	"github.com/matchgrain/matchgrain/protocol"
)

// keptToken reads the admin token an embedded node without --admin-token
// keeps in its data directory (it never prints it: TestNoSecretOnStdout).
func keptToken(t *testing.T, dir string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "admin-token"))
	if err != nil {
		t.Fatalf("the node keeps no admin token in its data directory: %v", err)
	}
	return strings.TrimSpace(string(b))
}

// TestEmbeddedRestartKeepsKeys kills an embedded node started without
// --ticket-key and --admin-token and starts it again on the same data
// directory, as a demo's player would: the admin token is the same, and a
// ticket issued before the restart (so also every seat link, derived from the
// same key) opens its seat on the restarted node.
func TestEmbeddedRestartKeepsKeys(t *testing.T) {
	dir := t.TempDir()
	first := startProcSecrets(t, "emb", false, "--data-dir", dir)
	tok := keptToken(t, dir)
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
	if got := keptToken(t, dir); got != tok {
		t.Fatal("the restarted node made a new admin token")
	}
	if _, err := client.NewAdmin("http://"+again.http, tok, nil).Decks(ctx); err != nil {
		t.Fatalf("the restarted node refuses the kept admin token: %v", err)
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

package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/matchgrain/matchgrain/client"
	"github.com/matchgrain/matchgrain/client/clienttest"
	"github.com/matchgrain/matchgrain/cluster/clustertest"
	"github.com/matchgrain/matchgrain/edge"
	"github.com/matchgrain/matchgrain/persistence/pgtest"
	"github.com/matchgrain/matchgrain/protocol"
)

// sharedToken reads the cluster's admin token where members keep it when
// they are given none: the database (docs/operations.md).
func sharedToken(t *testing.T, schema string) string {
	t.Helper()
	var tok string
	queryRow(t, fmt.Sprintf("SELECT convert_from(secret, 'UTF8') FROM %s.cluster_keys WHERE purpose = 'admin-token' ORDER BY generation DESC LIMIT 1",
		pgx.Identifier{schema}.Sanitize()), nil, &tok)
	return tok
}

// activeTicketGeneration is the newest ticket-key generation the database
// considers active.
func activeTicketGeneration(t *testing.T, schema string) int64 {
	t.Helper()
	var g int64
	queryRow(t, fmt.Sprintf("SELECT coalesce(max(generation), 0) FROM %s.cluster_keys WHERE purpose = 'ticket-key' AND active_from <= now()",
		pgx.Identifier{schema}.Sanitize()), nil, &g)
	return g
}

// TestClusterSharedSecrets starts three members on one PostgreSQL without
// --ticket-key and --admin-token, as a new operator would. They must agree
// on the admin token, and a ticket issued by any member must open a seat on
// any other (the reconnect-lands-elsewhere case), also across a ticket-key
// rotation: a ticket issued before the rotation still works after it.
func TestClusterSharedSecrets(t *testing.T) {
	schema := pgtest.NewSchema(t)
	common := []string{
		"--database-url", pgtest.URL(t), "--database-schema", schema,
		"--cluster-name", "secrets-" + strconv.FormatInt(time.Now().UnixNano(), 36),
		"--secrets-refresh", "300ms", "--ticket-key-rotation", "4s", "--ticket-ttl", "30s",
	}
	a := startProcSecrets(t, "a", false, common...)
	b := startProcSecrets(t, "b", false, append(common, "--join", a.gossip)...)
	c := startProcSecrets(t, "c", false, append(common, "--join", a.gossip)...)
	tok := sharedToken(t, schema)
	procs := []*proc{a, b, c}
	admins := make([]*client.Admin, len(procs))
	for i, p := range procs {
		admins[i] = client.NewAdmin("http://"+p.http, tok, nil)
		// Every member takes the token kept in the database...
		dctx, dcancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err := admins[i].Decks(dctx)
		dcancel()
		if err != nil {
			t.Fatalf("member %s refuses the cluster's admin token: %v", p.name, err)
		}
		// ...and none prints it: member output ends up in shared logs.
		if strings.Contains(p.logTail(), tok) {
			t.Fatalf("member %s printed the admin token", p.name)
		}
	}
	cc := &chaosCluster{admin: admins[0]}
	id := cc.createMatch(t, 21)

	// Every ordered pair: the ticket of one member opens the seat on another.
	for i := range procs {
		for j := range procs {
			if i == j {
				continue
			}
			seat, h := dialSeat(t, admins[i], procs[j].http, id, (i+j)%2, 0)
			if h.MatchID != id {
				t.Fatalf("ticket of %s on %s: hello for match %q", procs[i].name, procs[j].name, h.MatchID)
			}
			_ = seat.Conn.Close() // the next pair takes the seat over anyway
		}
	}

	// A ticket issued now, used only after the next key is active everywhere.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	early, err := admins[0].Ticket(ctx, id, 0)
	if err != nil {
		t.Fatalf("ticket: %v", err)
	}
	before := activeTicketGeneration(t, schema)
	var after int64
	clustertest.Eventually(t, 20*time.Second, 50*time.Millisecond, func() error {
		if after = activeTicketGeneration(t, schema); after <= before {
			return fmt.Errorf("ticket key generation still %d", after)
		}
		return nil
	})
	// Wait until every member signs with the new key or a later one (the
	// rotation goes on every 4 s): its refresh saw the new key.
	clustertest.Eventually(t, 20*time.Second, 50*time.Millisecond, func() error {
		var keys [][]byte
		queryRow(t, fmt.Sprintf("SELECT array_agg(secret ORDER BY generation) FROM %s.cluster_keys WHERE purpose = 'ticket-key' AND generation >= $1",
			pgx.Identifier{schema}.Sanitize()), []any{after}, &keys)
		verifier, err := edge.NewTicketer(keys[0], 30*time.Second, keys[1:]...)
		if err != nil {
			return err
		}
		for i, adm := range admins {
			tk, err := adm.Ticket(ctx, id, 0)
			if err != nil {
				return err
			}
			if _, err := verifier.Verify(tk.Ticket); err != nil {
				return fmt.Errorf("member %s still signs with a key older than generation %d: %w", procs[i].name, after, err)
			}
		}
		return nil
	})
	conn, err := client.Dial(ctx, "ws://"+c.http+"/game", client.DialOptions{})
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	defer func() { _ = conn.Close() }()
	if err := conn.Send(&protocol.ClientHello{ProtocolVersion: 1, Ticket: early.Ticket, ClientBuild: "secrets-test"}); err != nil {
		t.Fatalf("hello: %v", err)
	}
	r := &clienttest.Seat{T: t, Conn: conn}
	if _, ok := r.Recv(20 * time.Second).(*protocol.ServerHello); !ok {
		t.Fatalf("a ticket issued before the rotation was refused after it")
	}
	// And a fresh ticket, signed with the new key, works on another member.
	seat, _ := dialSeat(t, admins[1], a.http, id, 1, 0)
	_ = seat.Conn.Close()
}

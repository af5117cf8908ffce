package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"sync"
	"time"

	"github.com/matchgrain/matchgrain/client"
	"github.com/matchgrain/matchgrain/client/bots"
	"github.com/matchgrain/matchgrain/protocol"
)

// errDemoDone ends run after --demo --demo-exit played its match.
var errDemoDone = errors.New("demo finished")

// runDemo plays one bot match against this node over the real protocol
// (HTTP API, tickets, WebSocket) and prints it as it happens. With exit set
// it returns errDemoDone afterwards; otherwise the node keeps serving.
//
// The admin token is used here, never printed: tokenAt says where an
// operator finds it (stdout ends up in logs, and a printed command line
// in the process list of whoever pastes it).
func runDemo(ctx context.Context, baseURL, token, tokenAt string, think time.Duration, exit bool, log *slog.Logger) error {
	u, err := url.Parse(baseURL)
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	var mu sync.Mutex
	logf := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(os.Stdout, format+"\n", args...)
	}
	banner := func() {
		logf("\n  ▶ play in your browser: %s/   (against the bot, or send a friend a link)\n"+
			"    ops console: %s/console   (admin token: in %s)\n", baseURL, baseURL, tokenAt)
	}
	banner()
	admin := client.NewAdmin(baseURL, token, nil)
	start := time.Now()
	mr, err := bots.PlayMatch(ctx, admin, bots.MatchOptions{
		GameAddr: "ws://" + u.Host + "/game", Decks: [2]string{"S1", "S2"}, BotSeed: uint64(time.Now().UnixNano()),
		Think: think, Logger: log.With("component", "demo-bot"), Logf: logf, Narrate: true,
	})
	if err != nil {
		return fmt.Errorf("demo match: %w", err)
	}
	f := mr.Results[0].Final
	winner := "a draw"
	if f.Winner != protocol.NoWinner {
		winner = fmt.Sprintf("P%d (%s) wins", f.Winner, f.Players[f.Winner].Name)
	}
	logf("demo match %s over in %v: %s after %d turns, %d events; both bots' views matched the server's",
		mr.ID, time.Since(start).Round(time.Millisecond), winner, f.TurnNumber, f.EventSeq)
	if exit {
		return errDemoDone
	}
	logf("the server keeps running at %s (Ctrl-C to stop); watch two bots again: go run ./cmd/matchctl play --server %s "+
		"with the admin token in $MATCHGRAIN_ADMIN_TOKEN or a --token-file", baseURL, baseURL)
	banner()
	return nil
}

package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// cmdOps runs the operations commands (cluster, matches, match ID, replay
// ID; the console reads the same endpoints): one
// authenticated GET of matchd's /api/admin/ endpoints, printed as JSON.
// replay exits non-zero when the rebuilt match differs from what was stored.
func cmdOps(ctx context.Context, name string, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("matchctl "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	server := fs.String("server", "", "any member's HTTP base URL, http://HOST:PORT (required)")
	token := new(string)
	tokenFile := tokenFlags(fs, token)
	timeout := fs.Duration("timeout", time.Minute, "give up after this long")
	if err := fs.Parse(args); err != nil {
		return err
	}
	u, err := url.Parse(*server)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%w: --server must be http://HOST:PORT", errUsage)
	}
	if err := resolveToken(token, *tokenFile); err != nil {
		return err
	}
	path := "/api/admin/" + name // cluster, matches
	if name == "match" || name == "replay" {
		if fs.NArg() != 1 {
			return fmt.Errorf("%w: matchctl %s needs one match id", errUsage, name)
		}
		path = "/api/admin/matches/" + url.PathEscape(fs.Arg(0))
		if name == "replay" {
			path += "/replay"
		}
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(*server, "/")+path, nil)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	req.Header.Set("Authorization", "Bearer "+*token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	defer func() { _ = resp.Body.Close() }() // read fully below
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return fmt.Errorf("%s: read answer: %w", name, err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: HTTP %d: %s", name, resp.StatusCode, strings.TrimSpace(string(body)))
	}
	if _, err := stdout.Write(body); err != nil {
		return err
	}
	if name == "replay" {
		var r struct {
			SnapshotSeq       int64
			SnapshotIdentical bool
			FinalIdentical    bool
		}
		if err := json.Unmarshal(body, &r); err != nil {
			return fmt.Errorf("replay: decode answer: %w", err)
		}
		if !r.FinalIdentical || (r.SnapshotSeq > 0 && !r.SnapshotIdentical) {
			return fmt.Errorf("replay: the rebuilt match differs from the stored one (snapshotIdentical=%v finalIdentical=%v)",
				r.SnapshotIdentical, r.FinalIdentical)
		}
	}
	return nil
}

package edge

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/matchgrain/matchgrain/protocol"
)

// DeckInfo describes one deck for GET /api/decks.
type DeckInfo struct {
	// ID is what POST /api/matches takes as a player's deck ("S1").
	ID string `json:"id"`
	// Name is the display name.
	Name string `json:"name"`
	// Cards is the number of cards in the deck.
	Cards int `json:"cards"`
}

// Config holds every setting of an edge Server. A zero field takes the
// default named in its comment; New validates the result and refuses to start
// with a setting that cannot work. Durations are protocol timers in
// production and are scaled down by tests.
type Config struct {
	// TicketKey signs tickets (HMAC-SHA256); at least 32 bytes. Required.
	TicketKey []byte
	// TicketPreviousKeys are also accepted when verifying, for key rotation.
	TicketPreviousKeys [][]byte
	// TicketTTL is a ticket's validity (default 60 s).
	TicketTTL time.Duration
	// AdminToken is the bearer token of /api/*. Required; it is compared in
	// constant time and never logged.
	AdminToken string
	// AdminTokensPrevious are also accepted on /api/*, for rotation: deploy
	// the new token as AdminToken with the old one here, move the API's
	// callers to the new one, then drop the old one.
	AdminTokensPrevious []string
	// Decks lists the decks for GET /api/decks and for checking the decks of
	// POST /api/matches. Nil: no decks are listed and deck ids are passed to
	// Matches.CreateMatch unchecked.
	Decks func() []DeckInfo

	// HelloTimeout is how long a new connection has to send ClientHello (default 10 s).
	HelloTimeout time.Duration
	// HeartbeatIdle: after this long without a client frame the server sends
	// ServerPing (default 20 s). Must be shorter than HeartbeatTimeout.
	HeartbeatIdle time.Duration
	// HeartbeatTimeout: this long after the last client frame the connection
	// is closed with 4408 (default 40 s).
	HeartbeatTimeout time.Duration
	// NoReaderParking keeps every connection's reader waiting in
	// gorilla's read. By default the reader of a quiet connection (after
	// the hello and after each keep-alive frame) moves to a fresh
	// goroutine that waits for the next frame on the smallest stack: about
	// 2 KiB of memory per quiet connection saved, one goroutine start and
	// a stack that grows again when the client speaks.
	NoReaderParking bool
	// NoResumeTickets stops the edge from sending ServerResumeTicket to the
	// sessions that ask for it (docs/protocol.md §4 point 7): every
	// reconnect then needs a ticket from the service that issues them.
	NoResumeTickets bool
	// WriteTimeout bounds every write to a client; a client that does not
	// take a frame within it is disconnected (default 10 s).
	WriteTimeout time.Duration
	// RequestTimeout bounds each call into Matches (default 10 s).
	RequestTimeout time.Duration
	// CloseLinger is how long a closing connection keeps reading (and
	// discarding) after the final frames, so that the close frame is not
	// destroyed by a TCP reset (default 1 s).
	CloseLinger time.Duration

	// IntentsPerSecond is the per-connection intent rate (default 16).
	IntentsPerSecond float64
	// IntentBurst is how many intents may arrive at once (default 16).
	IntentBurst int
	// AbuseFactor and AbuseWindow: more than AbuseFactor × IntentsPerSecond
	// frames per second sustained over AbuseWindow closes the connection with
	// a fatal RateLimited and 4413 (defaults 4 and 2 s). Every frame after the
	// handshake counts, not only intents, so that floods of pings or resyncs
	// are caught too.
	AbuseFactor float64
	AbuseWindow time.Duration

	// OutboundQueueFrames bounds the frames waiting to be written to one
	// connection (default 512).
	OutboundQueueFrames int
	// OutboundQueueBytes bounds the bytes waiting to be written to one
	// connection (default 4 MiB, at least protocol.MaxFrameBytes).
	OutboundQueueBytes int

	// AllowedOrigins lists the browser origins ("https://game.example.com")
	// allowed to open /game; "*" allows any. Empty: requests without an Origin
	// header and same-host origins only. Requests without Origin (non-browser
	// clients) are always allowed.
	AllowedOrigins []string
	// MaxBodyBytes bounds an HTTP API request body (default 64 KiB).
	MaxBodyBytes int64
	// MaxHeaderBytes bounds an HTTP request's header (default 16 KiB).
	MaxHeaderBytes int

	// MaxConnections bounds the open connections of the listeners wrapped
	// by LimitListener and ServeTCP together (default 20000).
	MaxConnections int
	// MaxConnectionsPerAddress bounds them per client IPv4 address or IPv6
	// /64 (default 64: a household or a small office behind one NAT).
	MaxConnectionsPerAddress int
	// MaxHandshakes bounds the connections that have not yet finished an
	// HTTP request or opened a seat with ClientHello (default 1024).
	MaxHandshakes int
	// HTTPHeaderTimeout bounds reading an HTTP request's header (default 5 s).
	HTTPHeaderTimeout time.Duration
	// HTTPReadTimeout bounds reading a whole HTTP request, body included
	// (default 10 s).
	HTTPReadTimeout time.Duration
	// HTTPWriteTimeout bounds writing an HTTP response (default 15 s: it
	// runs from the end of the request header, so it covers RequestTimeout).
	HTTPWriteTimeout time.Duration
	// HTTPIdleTimeout closes keep-alive HTTP connections idle this long
	// (default 60 s).
	HTTPIdleTimeout time.Duration
	// SeparateMetrics makes Handler answer 404 on /metrics: the caller
	// serves MetricsHandler on a listener of its own (matchd
	// --metrics-listen), away from the players' network.
	SeparateMetrics bool

	// Registry receives the edge's metrics and is what GET /metrics serves,
	// so a node registers all its collectors in it (matchd adds the match
	// grains' metrics). Nil: a registry of its own from NewRegistry. Two
	// Servers must not share one (their metric names would collide).
	Registry *prometheus.Registry
	// PublicPlay enables the browser-facing play endpoints (POST
	// /api/play/matches, /api/play/tickets and GET /api/play/decks) that
	// need no admin token; see play.go for what they allow. Off by default.
	PublicPlay bool
	// MaxSpectators is how many spectators a match accepts at once
	// (docs/protocol.md §14.7, matchd --max-spectators); 0, the zero
	// value, issues no spectator tickets. The match grain enforces the cap.
	MaxSpectators int
	// SpectatorDelayEvents and SpectatorDelay are the match grains'
	// spectator delay (docs/protocol.md §14.5), which the ticket answers
	// report; the grains apply it.
	SpectatorDelayEvents int
	SpectatorDelay       time.Duration
	// PublicCreatesPerMinute bounds public match creation per client
	// address (default 10); PublicCreatesGlobalPerMinute for the whole edge
	// (default 120).
	PublicCreatesPerMinute       float64
	PublicCreatesGlobalPerMinute float64
	// UseOnce records that the single-use secret id (a friend invite) was
	// used by claimant, valid until expires: nil if it was not used yet or
	// by the same claimant, an error wrapping ErrTicketUsed if another
	// claimant used it. Every edge of a cluster must share the record
	// (matchd uses the store's used tickets). Nil: a record in this
	// process only, enough for one edge.
	UseOnce func(ctx context.Context, id string, expires time.Time, claimant string) error
	// Admitted, if set, says whether this node is part of its cluster
	// (cluster.Node.Admitted): while it returns an error the edge serves no
	// player (/game and /api/* answer 503 not_admitted, TCP connections are
	// closed at once) and /healthz answers 503 {"status":"not_admitted"}.
	Admitted func() error
	// Admin, if set, serves every path under AdminPrefix (/api/admin/),
	// GET only, to holders of the admin token: the edge checks the token
	// exactly as on its own admin routes (matchd mounts ops.Handler here).
	Admin http.Handler
	// Replays, if set, serves GET ReplaysPrefix+{matchId} with PublicPlay:
	// a finished match's replay as a spectator saw it (docs/protocol.md
	// §15), rate limited per client address like the other public
	// requests (matchd mounts ops.PublicReplays here).
	Replays http.Handler
	// Live, if set, serves GET LivePath with PublicPlay: the running
	// matches to watch, rate limited like Replays (matchd mounts
	// ops.PublicLive here).
	Live http.Handler
	// Fallback, if set, serves every path the edge does not know (matchd
	// serves its web client and ops console there). Nil answers 404.
	Fallback http.Handler

	// Logger receives the edge's logs (default slog.Default()). Tickets and
	// frame contents are never logged.
	Logger *slog.Logger
}

// Default settings.
const (
	DefaultHelloTimeout        = 10 * time.Second
	DefaultHeartbeatIdle       = 20 * time.Second
	DefaultHeartbeatTimeout    = 40 * time.Second
	DefaultWriteTimeout        = 10 * time.Second
	DefaultRequestTimeout      = 10 * time.Second
	DefaultCloseLinger         = time.Second
	DefaultIntentsPerSecond    = 16
	DefaultIntentBurst         = 16
	DefaultAbuseFactor         = 4
	DefaultAbuseWindow         = 2 * time.Second
	DefaultOutboundQueueFrames = 512
	DefaultOutboundQueueBytes  = 4 << 20
	DefaultMaxBodyBytes        = 64 << 10
	DefaultMaxHeaderBytes      = 16 << 10
	DefaultMaxConnections      = 20000
	DefaultMaxConnsPerAddress  = 64
	DefaultMaxHandshakes       = 1024
	DefaultHTTPHeaderTimeout   = 5 * time.Second
	DefaultHTTPReadTimeout     = 10 * time.Second
	DefaultHTTPWriteTimeout    = 15 * time.Second
	DefaultHTTPIdleTimeout     = 60 * time.Second
)

// withDefaults returns c with every zero field set to its default.
func (c Config) withDefaults() Config {
	setDur := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	setDur(&c.TicketTTL, DefaultTicketTTL)
	setDur(&c.HelloTimeout, DefaultHelloTimeout)
	setDur(&c.HeartbeatIdle, DefaultHeartbeatIdle)
	setDur(&c.HeartbeatTimeout, DefaultHeartbeatTimeout)
	setDur(&c.WriteTimeout, DefaultWriteTimeout)
	setDur(&c.RequestTimeout, DefaultRequestTimeout)
	setDur(&c.CloseLinger, DefaultCloseLinger)
	setDur(&c.AbuseWindow, DefaultAbuseWindow)
	if c.IntentsPerSecond == 0 {
		c.IntentsPerSecond = DefaultIntentsPerSecond
	}
	if c.IntentBurst == 0 {
		c.IntentBurst = DefaultIntentBurst
	}
	if c.AbuseFactor == 0 {
		c.AbuseFactor = DefaultAbuseFactor
	}
	if c.OutboundQueueFrames == 0 {
		c.OutboundQueueFrames = DefaultOutboundQueueFrames
	}
	if c.OutboundQueueBytes == 0 {
		c.OutboundQueueBytes = DefaultOutboundQueueBytes
	}
	if c.MaxBodyBytes == 0 {
		c.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if c.PublicCreatesPerMinute == 0 {
		c.PublicCreatesPerMinute = DefaultPublicCreatesPerMinute
	}
	if c.PublicCreatesGlobalPerMinute == 0 {
		c.PublicCreatesGlobalPerMinute = DefaultPublicCreatesGlobalPerMinute
	}
	if c.UseOnce == nil {
		c.UseOnce = (&memoryOnce{used: map[string]string{}}).use
	}
	setInt := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	setInt(&c.MaxHeaderBytes, DefaultMaxHeaderBytes)
	setInt(&c.MaxConnections, DefaultMaxConnections)
	setInt(&c.MaxConnectionsPerAddress, DefaultMaxConnsPerAddress)
	setInt(&c.MaxHandshakes, DefaultMaxHandshakes)
	setDur(&c.HTTPHeaderTimeout, DefaultHTTPHeaderTimeout)
	setDur(&c.HTTPReadTimeout, DefaultHTTPReadTimeout)
	setDur(&c.HTTPWriteTimeout, DefaultHTTPWriteTimeout)
	setDur(&c.HTTPIdleTimeout, DefaultHTTPIdleTimeout)
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Registry == nil {
		c.Registry = NewRegistry()
	}
	return c
}

// Validate reports the first setting that cannot work, with the flag-style
// name of the setting. Zero fields are errors here: call it on a Config with
// defaults applied (New does).
func (c *Config) Validate() error {
	positive := []struct {
		name string
		d    time.Duration
	}{
		{"ticket-ttl", c.TicketTTL},
		{"hello-timeout", c.HelloTimeout},
		{"heartbeat-idle", c.HeartbeatIdle},
		{"heartbeat-timeout", c.HeartbeatTimeout},
		{"write-timeout", c.WriteTimeout},
		{"request-timeout", c.RequestTimeout},
		{"close-linger", c.CloseLinger},
		{"abuse-window", c.AbuseWindow},
		{"http-header-timeout", c.HTTPHeaderTimeout},
		{"http-read-timeout", c.HTTPReadTimeout},
		{"http-write-timeout", c.HTTPWriteTimeout},
		{"http-idle-timeout", c.HTTPIdleTimeout},
	}
	switch {
	case len(c.TicketKey) < MinTicketKeyLen:
		return fmt.Errorf("ticket-key must be at least %d bytes", MinTicketKeyLen)
	case c.AdminToken == "":
		return errors.New("admin-token must not be empty")
	}
	for i, k := range c.TicketPreviousKeys {
		if len(k) < MinTicketKeyLen {
			return fmt.Errorf("ticket-previous-keys[%d] must be at least %d bytes", i, MinTicketKeyLen)
		}
	}
	for _, p := range positive {
		if p.d <= 0 {
			return fmt.Errorf("%s must be positive", p.name)
		}
	}
	switch {
	case c.HeartbeatIdle >= c.HeartbeatTimeout:
		return errors.New("heartbeat-idle must be shorter than heartbeat-timeout")
	case c.IntentsPerSecond <= 0:
		return errors.New("intents-per-second must be positive")
	case c.IntentBurst < 1:
		return errors.New("intent-burst must be at least 1")
	case c.AbuseFactor <= 1:
		return errors.New("abuse-factor must be greater than 1")
	case c.OutboundQueueFrames < 1:
		return errors.New("outbound-queue-frames must be at least 1")
	case c.OutboundQueueBytes < protocol.MaxFrameBytes:
		return fmt.Errorf("outbound-queue-bytes must be at least %d", protocol.MaxFrameBytes)
	case c.MaxBodyBytes <= 0:
		return errors.New("max-body-bytes must be positive")
	case c.MaxHeaderBytes <= 0:
		return errors.New("max-header-bytes must be positive")
	case c.MaxConnections <= 0:
		return errors.New("max-connections must be positive")
	case c.MaxConnectionsPerAddress <= 0:
		return errors.New("max-connections-per-address must be positive")
	case c.MaxHandshakes <= 0:
		return errors.New("max-handshakes must be positive")
	}
	for i, t := range c.AdminTokensPrevious {
		if t == "" {
			return fmt.Errorf("admin-tokens-previous[%d] must not be empty", i)
		}
	}
	for _, o := range c.AllowedOrigins {
		if o == "*" {
			continue
		}
		if _, err := parseOrigin(o); err != nil {
			return fmt.Errorf("allowed-origins: %q is not an origin (scheme://host[:port])", o)
		}
	}
	return nil
}

// parseOrigin normalises an origin to lowercase "scheme://host[:port]".
func parseOrigin(o string) (string, error) {
	u, err := url.Parse(o)
	if err != nil {
		return "", fmt.Errorf("parse origin: %w", err)
	}
	if u.Scheme == "" || u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.User != nil {
		return "", errors.New("not scheme://host[:port]")
	}
	return strings.ToLower(u.Scheme + "://" + u.Host), nil
}

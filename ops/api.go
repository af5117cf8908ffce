package ops

import (
	"context"
	"log/slog"
	"net/http"

	"github.com/matchgrain/matchgrain/actors"
	"github.com/matchgrain/matchgrain/cluster"
	"github.com/matchgrain/matchgrain/edge"
	"github.com/matchgrain/matchgrain/persistence"
)

// Routes are the endpoints Handler serves, all GET, in net/http's pattern
// syntax. Tests walk them to check that each one is behind the admin token.
var Routes = []string{
	"/api/admin/cluster",
	"/api/admin/matches",
	"/api/admin/matches/{id}",
	"/api/admin/matches/{id}/replay",
	"/api/admin/matches/{id}/events",
}

// Node is what the API reads of the cluster member it runs on
// (*cluster.Node). Every method must be safe for concurrent use.
type Node interface {
	// ID is this member's id.
	ID() string
	// Members is the cluster as this member sees it.
	Members() []cluster.Member
	// Describe asks the member at a remote address to describe itself.
	Describe(ctx context.Context, address string) (map[string]string, error)
}

// Deps is what the API reads. Every function must be safe for concurrent use.
type Deps struct {
	Node Node
	// Store is the node's store; the per-match endpoints and the cluster's
	// match counts need it to implement persistence.Inspector (both stores
	// do) and answer 501 otherwise.
	Store persistence.Store
	// Rules and Timing rebuild a match from its log (replay).
	Rules  actors.Rules
	Timing actors.Timing
	// Status asks a match grain for its status.
	Status func(ctx context.Context, matchID string) (*actors.MatchStatus, error)
	// Takeovers are this member's recent takeovers (nil: none).
	Takeovers func() []actors.Takeover
	// Logger receives store failures (default slog.Default()).
	Logger *slog.Logger
}

// Keys of the description every member gives of itself (cluster.Config.Info),
// shown per member by GET /api/admin/cluster.
const (
	InfoRules = "rulesVersion"
	InfoBuild = "build"
)

type api struct{ Deps }

// Handler serves Routes. It does not check the admin token: mount it behind
// the edge (edge.Config.Admin), which does.
func Handler(d Deps) http.Handler {
	if d.Logger == nil {
		d.Logger = slog.Default()
	}
	a := &api{d}
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+Routes[0], a.cluster)
	mux.HandleFunc("GET "+Routes[1], a.matches)
	mux.HandleFunc("GET "+Routes[2], a.match)
	mux.HandleFunc("GET "+Routes[3], a.replay)
	mux.HandleFunc("GET "+Routes[4], a.events)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, pattern := mux.Handler(r); pattern == "" {
			edge.WriteError(w, http.StatusNotFound, "not_found", "no such endpoint")
			return
		}
		mux.ServeHTTP(w, r)
	})
}

func (a *api) inspector(w http.ResponseWriter) (persistence.Inspector, bool) {
	in, ok := a.Store.(persistence.Inspector)
	if !ok {
		edge.WriteError(w, http.StatusNotImplemented, "not_supported", "needs the PostgreSQL store (--database-url)")
	}
	return in, ok
}

func (a *api) unavailable(w http.ResponseWriter, what string, err error) {
	a.Logger.Warn("ops: "+what, "err", err)
	edge.WriteError(w, http.StatusServiceUnavailable, "unavailable", "store unavailable")
}

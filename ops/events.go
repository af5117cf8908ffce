package ops

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/matchgrain/matchgrain/actors"
	"github.com/matchgrain/matchgrain/edge"
	"github.com/matchgrain/matchgrain/persistence"
	"github.com/matchgrain/matchgrain/protocol"
)

// FramesContentType is the media type of a replay's body: server frames,
// each with the TCP transport's 4-byte length prefix (docs/protocol.md §15).
const FramesContentType = "application/vnd.matchgrain.frames"

// prunedAnswer is the 410 answer for a match whose log retention pruned:
// the usual error object with the match's result.
type prunedAnswer struct {
	Error   string `json:"error"`
	Message string `json:"message"`
	actors.ReplayResult
}

// events is GET /api/admin/matches/{id}/events?seat=N: a finished match's
// events replayed from its log as seat N (0, 1, or 2 for a spectator, the
// default) saw them, streamed as frames.
func (a *api) events(w http.ResponseWriter, r *http.Request) {
	viewer := protocol.SeatSpectator
	if s := r.URL.Query().Get("seat"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 || n > protocol.SeatSpectator {
			edge.WriteError(w, http.StatusBadRequest, "bad_seat", "seat must be 0, 1 or 2 (a spectator)")
			return
		}
		viewer = n
	}
	a.streamReplay(w, r, r.PathValue("id"), viewer)
}

// PublicReplays serves edge.ReplaysPrefix+{id}: a finished match's replay
// as a spectator saw it, to anyone (docs/protocol.md §15). It checks no
// token: the edge mounts it with public play (edge.Config.Replays) and
// rate limits it; a spectator's view hides nothing either seat hid.
func PublicReplays(d Deps) http.Handler {
	if d.Logger == nil {
		d.Logger = slog.Default()
	}
	a := &api{d}
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+edge.ReplaysPrefix+"{id}", func(w http.ResponseWriter, r *http.Request) {
		a.streamReplay(w, r, r.PathValue("id"), protocol.SeatSpectator)
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, pattern := mux.Handler(r); pattern == "" {
			edge.WriteError(w, http.StatusNotFound, "not_found", "no such endpoint")
			return
		}
		mux.ServeHTTP(w, r)
	})
}

// streamReplay answers a replay of match id as viewer saw it.
func (a *api) streamReplay(w http.ResponseWriter, r *http.Request, id string, viewer int) {
	in, ok := a.inspector(w)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
	defer cancel()
	rec, err := in.ReadMatch(ctx, id)
	if errors.Is(err, persistence.ErrMatchNotFound) {
		edge.WriteError(w, http.StatusNotFound, "match_not_found", "no such match")
		return
	}
	if err != nil {
		a.unavailable(w, "read match", err)
		return
	}
	started := false
	res, err := actors.StreamReplay(a.Rules, a.Timing, id, rec.Meta, rec.Finished, rec.Snapshot, rec.Log, viewer, func(frame []byte) error {
		if !started {
			started = true
			w.Header().Set("Content-Type", FramesContentType)
			w.WriteHeader(http.StatusOK)
		}
		return protocol.WriteFrame(w, frame)
	})
	switch {
	case started:
		if err != nil {
			// The status is sent: the client sees a stream without GameFinished.
			a.Logger.Warn("ops: replay stream cut", "match", id, "err", err)
		}
	case errors.Is(err, actors.ErrNotFinished):
		edge.WriteError(w, http.StatusConflict, "match_running", "the match has not finished: watch it as a spectator")
	case errors.Is(err, actors.ErrLogPruned):
		edge.WriteJSON(w, http.StatusGone, prunedAnswer{Error: "log_pruned",
			Message: "log retention pruned this match's events; only its result is kept", ReplayResult: res})
	case err != nil:
		edge.WriteError(w, http.StatusUnprocessableEntity, "replay_failed", err.Error())
	}
}

package ops_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/matchgrain/matchgrain/actors"
	"github.com/matchgrain/matchgrain/ops"
	"github.com/matchgrain/matchgrain/persistence"
	"github.com/matchgrain/matchgrain/persistence/pgtest"
	"github.com/matchgrain/matchgrain/persistence/storetest"
	"github.com/matchgrain/matchgrain/protocol"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// botMatch drives a match between two bots on store, on a virtual clock,
// until done(status) says stop.
type botMatch struct {
	core  *actors.Core
	store persistence.Store
	now   time.Time
	next  time.Duration
}

func startBots(t *testing.T, store persistence.Store, id string) *botMatch {
	t.Helper()
	b := &botMatch{now: time.UnixMilli(1_767_225_600_000), store: store}
	timing := actors.DefaultTiming()
	timing.BotThink = 100 * time.Millisecond
	cores, err := actors.NewCores(actors.GrainDeps{Store: store, Rules: actors.GameRules{}, Timing: timing,
		Owner: func() string { return "m1" }, Now: func() time.Time { return b.now }})
	if err != nil {
		t.Fatal(err)
	}
	meta, err := actors.EncodeMatchMeta([2]string{"A", "B"}, [2]string{"S1", "S2"}, 7, b.now.UnixMilli(), [2]bool{true, true}, actors.GameRules{})
	if err != nil {
		t.Fatal(err)
	}
	if err := store.CreateMatch(context.Background(), id, meta); err != nil {
		t.Fatal(err)
	}
	b.core = cores()
	b.take(b.core.Activate(id))
	return b
}

func (b *botMatch) take(rd actors.Ready) {
	if rd = b.settle(rd); rd.Tick {
		b.next = rd.TickIn
	}
	if adv := b.settle(b.core.Advance()); adv.Tick {
		b.next = adv.TickIn
	}
}

// settle answers a step's store calls at once, as the grain does.
func (b *botMatch) settle(rd actors.Ready) actors.Ready {
	for rd.Store != nil {
		rd = b.core.StoreDone(rd.Store.Do(context.Background(), b.store))
	}
	return rd
}

func (b *botMatch) status(t *testing.T) *actors.MatchStatus {
	t.Helper()
	for _, s := range b.settle(b.core.Handle(&actors.Inspect{})).Sends {
		if r, ok := s.Msg.(*actors.Reply); ok && r.Status != nil {
			return r.Status
		}
	}
	t.Fatal("no status")
	return nil
}

// play steps the bots until the match has at least seq events, or ended.
func (b *botMatch) play(t *testing.T, seq int64) *actors.MatchStatus {
	t.Helper()
	for i := 0; i < 50000; i++ {
		st := b.status(t)
		if st.Finished || st.EventSeq >= seq {
			return st
		}
		b.now = b.now.Add(b.next)
		b.take(b.core.Tick())
	}
	t.Fatal("the bots did not get there")
	return nil
}

// TestEventsReplay: GET /api/admin/matches/{id}/events streams a finished
// match's events as a spectator (or a seat) saw them, ending with
// GameFinished; a running match is refused; once retention pruned the log,
// the answer is 410 with the result.
func TestEventsReplay(t *testing.T) {
	store := pgtest.NewStore(t)
	h := ops.Handler(ops.Deps{Node: node{}, Store: store, Rules: actors.GameRules{}, Timing: actors.DefaultTiming()})
	b := startBots(t, store, "m_replay")
	b.play(t, 30)
	if code, body := get(t, h, "/api/admin/matches/m_replay/events"); code != http.StatusConflict || body["error"] != "match_running" {
		t.Fatalf("a running match: %d %v", code, body)
	}
	st := b.play(t, 1<<40)
	if code, body := get(t, h, "/api/admin/matches/m_replay/events?seat=3"); code != http.StatusBadRequest || body["error"] != "bad_seat" {
		t.Fatalf("seat 3: %d %v", code, body)
	}
	if code, body := get(t, h, "/api/admin/matches/nope/events"); code != http.StatusNotFound {
		t.Fatalf("unknown match: %d %v", code, body)
	}

	for _, seat := range []string{"", "?seat=1"} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/api/admin/matches/m_replay/events"+seat, nil))
		if rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != ops.FramesContentType {
			t.Fatalf("replay%s: %d %s %q", seat, rec.Code, rec.Header().Get("Content-Type"), rec.Body.String())
		}
		fr := protocol.NewFrameReader(bytes.NewReader(rec.Body.Bytes()), 0)
		var frames []protocol.ServerFrame
		for {
			b, err := fr.ReadFrame()
			if err != nil {
				break
			}
			f, err := protocol.DecodeServerFrame(b)
			if err != nil {
				t.Fatalf("replay%s: frame %d: %v", seat, len(frames), err)
			}
			frames = append(frames, f)
		}
		hello, _ := frames[0].(*protocol.ServerHello)
		last, _ := frames[len(frames)-1].(*protocol.ServerEvents)
		if hello == nil || hello.EventSeq != st.EventSeq || last == nil || last.ToSeq != st.EventSeq {
			t.Fatalf("replay%s: %d frames from %T to %T, want a hello and events to seq %d", seat, len(frames), frames[0], frames[len(frames)-1], st.EventSeq)
		}
		if fin, ok := last.Events[len(last.Events)-1].Event.(*protocol.GameFinishedEvent); !ok || fin.Winner != st.Winner {
			t.Fatalf("replay%s ends with %+v, the match's winner is %d", seat, last.Events[len(last.Events)-1], st.Winner)
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if m, _, err := store.PruneFinishedLogs(ctx, time.Now().Add(time.Hour), 10); err != nil || m != 1 {
		t.Fatalf("prune: %d matches, %v", m, err)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/api/admin/matches/m_replay/events", nil))
	var pruned struct {
		Error        string `json:"error"`
		Message      string `json:"message"`
		Winner       *int   `json:"winner"`
		FinishReason *int   `json:"finishReason"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &pruned); err != nil || rec.Code != http.StatusGone || pruned.Error != "log_pruned" ||
		pruned.Winner == nil || *pruned.Winner != st.Winner || pruned.FinishReason == nil || pruned.Message == "" {
		t.Fatalf("pruned: %d %s", rec.Code, rec.Body)
	}
}

// TestPublicReplays: the public replay route streams a finished match as a
// spectator saw it, and nothing else.
func TestPublicReplays(t *testing.T) {
	store := pgtest.NewStore(t)
	h := ops.PublicReplays(ops.Deps{Node: node{}, Store: store, Rules: actors.GameRules{}, Timing: actors.DefaultTiming()})
	b := startBots(t, store, "m_public")
	b.play(t, 1<<40)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/api/play/replays/m_public", nil))
	if rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != ops.FramesContentType {
		t.Fatalf("public replay: %d %q", rec.Code, rec.Body.String())
	}
	payload, err := protocol.NewFrameReader(bytes.NewReader(rec.Body.Bytes()), 0).ReadFrame()
	if err != nil {
		t.Fatal(err)
	}
	if f, err := protocol.DecodeServerFrame(payload); err != nil || f.(*protocol.ServerHello).PlayerIndex != protocol.SeatSpectator {
		t.Fatalf("public replay's first frame %+v, %v: want a spectator's hello", f, err)
	}
	for _, path := range []string{"/api/play/replays/", "/api/play/replays/m_public/more", "/api/admin/matches/m_public/events"} {
		if code, body := get(t, h, path); code != http.StatusNotFound {
			t.Fatalf("%s: %d %v", path, code, body)
		}
	}
}

// TestPublicLive lists the running matches whose grain answered, with what
// a spectator may know, and not a finished or silent one.
func TestPublicLive(t *testing.T) {
	store := storetest.Embedded(t)
	for _, id := range []string{"a", "b", "c"} {
		if err := store.CreateMatch(context.Background(), id, []byte("meta")); err != nil {
			t.Fatal(err)
		}
	}
	h := ops.PublicLive(ops.Deps{Node: node{}, Store: store, Rules: actors.GameRules{}, Timing: actors.DefaultTiming(),
		Status: func(_ context.Context, id string) (*actors.MatchStatus, error) {
			switch id {
			case "a":
				return &actors.MatchStatus{MatchID: id, Names: [2]string{"Ann", "Bob"}, Turn: 4, Spectators: 2, Owner: "m1"}, nil
			case "b":
				return &actors.MatchStatus{MatchID: id, Finished: true}, nil
			}
			return nil, errors.New("moving")
		}})
	code, body := get(t, h, "/api/play/live")
	list, _ := body["matches"].([]any)
	if code != http.StatusOK || len(list) != 1 {
		t.Fatalf("live: %d %v, want match a only", code, body)
	}
	m := list[0].(map[string]any)
	if m["matchId"] != "a" || m["turn"] != 4.0 || m["spectators"] != 2.0 || m["owner"] != nil {
		t.Fatalf("live entry %v", m)
	}
}

package edge

import (
	"fmt"
	"io"
	"net/http"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/matchgrain/matchgrain/protocol"
)

// Transport labels.
const (
	transportWS  = 0
	transportTCP = 1
)

var transportNames = [2]string{"ws", "tcp"}

// Edge-decided intent outcomes (label "result" of matchgrain_edge_intents_total).
const (
	intentForwarded = iota
	intentRateLimited
	intentNotSupported
	intentCount
)

var intentResultNames = [intentCount]string{"forwarded", "rate_limited", "not_supported"}

// rejectCodeNames labels ServerIntentResult codes seen on the way out.
var rejectCodeNames = [...]string{
	protocol.RejectNone:          "accepted",
	protocol.RejectIllegal:       "illegal",
	protocol.RejectNotYourTurn:   "not_your_turn",
	protocol.RejectMatchFinished: "match_finished",
	protocol.RejectNotSupported:  "not_supported",
	protocol.RejectRateLimited:   "rate_limited",
	protocol.RejectMalformed:     "malformed",
	protocol.RejectStale:         "stale",
}

// metrics are the edge's counters and gauges, written in the Prometheus text
// format by hand. Every field is updated atomically; the HTTP request
// counter, whose label set is open, is behind a mutex.
type metrics struct {
	connections      [2]atomic.Int64
	connectionsTotal [2]atomic.Uint64
	framesIn         [2]atomic.Uint64
	framesOut        [2]atomic.Uint64
	bytesIn          [2]atomic.Uint64
	bytesOut         [2]atomic.Uint64
	closes           [reasonCount]atomic.Uint64
	intents          [intentCount]atomic.Uint64
	intentResults    [len(rejectCodeNames) + 1]atomic.Uint64 // last: unrecognised code
	duplicates       atomic.Uint64
	ticketsIssued    atomic.Uint64
	matchesCreated   atomic.Uint64

	httpMu   sync.Mutex
	httpReqs map[httpKey]uint64
}

type httpKey struct {
	route string
	code  int
}

func newMetrics() *metrics { return &metrics{httpReqs: make(map[httpKey]uint64)} }

func (m *metrics) httpRequest(route string, code int) {
	m.httpMu.Lock()
	m.httpReqs[httpKey{route, code}]++
	m.httpMu.Unlock()
}

// observeOutbound counts the intent results among frames going to a client.
// It only peeks at the first bytes of each frame; frames it cannot read are
// ignored (they are the match's business).
func (m *metrics) observeOutbound(frames [][]byte) {
	for _, f := range frames {
		code, dup, ok := peekIntentResult(f)
		if !ok {
			continue
		}
		if dup {
			m.duplicates.Add(1)
		}
		if code >= 0 && int(code) < len(rejectCodeNames) {
			m.intentResults[code].Add(1)
		} else {
			m.intentResults[len(rejectCodeNames)].Add(1)
		}
	}
}

// peekIntentResult reads code and duplicate of an encoded ServerIntentResult
// ([3, [intentId, accepted, code, reason, eventSeq, duplicate]]) without
// decoding the frame.
func peekIntentResult(b []byte) (code protocol.IntentRejectCode, dup bool, ok bool) {
	if len(b) < 6 || b[0] != 0x92 || b[1] != byte(protocol.ServerIntentResultKind) {
		return 0, false, false
	}
	i := 2
	var fields int
	switch c := b[i]; {
	case c >= 0x90 && c <= 0x9f:
		fields = int(c & 0x0f)
		i++
	default:
		return 0, false, false
	}
	if fields < 3 {
		return 0, false, false
	}
	// intentId
	var n int
	switch c := b[i]; {
	case c >= 0xa0 && c <= 0xbf:
		n, i = int(c&0x1f), i+1
	case c == 0xd9 && i+1 < len(b):
		n, i = int(b[i+1]), i+2
	default:
		return 0, false, false
	}
	i += n
	if i+2 > len(b) {
		return 0, false, false
	}
	i++ // accepted
	c := b[i]
	if c > 0x7f {
		return 0, false, false
	}
	code = protocol.IntentRejectCode(c)
	if fields < 6 {
		return code, false, true
	}
	// reason, eventSeq, duplicate: the duplicate flag is the last byte when
	// the body has exactly six fields.
	if fields == 6 {
		dup = b[len(b)-1] == 0xc3
	}
	return code, dup, true
}

// write renders every metric in the Prometheus text exposition format.
func (m *metrics) write(w io.Writer) error {
	ew := &errWriter{w: w}
	gauge := func(name, help string) { ew.printf("# HELP %s %s\n# TYPE %s gauge\n", name, help, name) }
	counter := func(name, help string) { ew.printf("# HELP %s %s\n# TYPE %s counter\n", name, help, name) }

	gauge("matchgrain_edge_connections", "Open game connections.")
	for i, t := range transportNames {
		ew.printf("matchgrain_edge_connections{transport=%q} %d\n", t, m.connections[i].Load())
	}
	perTransport := []struct {
		name, help string
		v          *[2]atomic.Uint64
	}{
		{"matchgrain_edge_connections_total", "Game connections accepted.", &m.connectionsTotal},
		{"matchgrain_edge_frames_in_total", "Frames received from clients.", &m.framesIn},
		{"matchgrain_edge_frames_out_total", "Frames written to clients.", &m.framesOut},
		{"matchgrain_edge_bytes_in_total", "Frame payload bytes received from clients.", &m.bytesIn},
		{"matchgrain_edge_bytes_out_total", "Frame payload bytes written to clients.", &m.bytesOut},
	}
	for _, c := range perTransport {
		counter(c.name, c.help)
		for i, t := range transportNames {
			ew.printf("%s{transport=%q} %d\n", c.name, t, c.v[i].Load())
		}
	}
	counter("matchgrain_edge_closes_total", "Connections closed, by reason.")
	for r := CloseReason(1); r < reasonCount; r++ {
		ew.printf("matchgrain_edge_closes_total{reason=%q} %d\n", r.String(), m.closes[r].Load())
	}
	counter("matchgrain_edge_intents_total", "Client intents, by what the edge did with them.")
	for i, n := range intentResultNames {
		ew.printf("matchgrain_edge_intents_total{result=%q} %d\n", n, m.intents[i].Load())
	}
	counter("matchgrain_edge_intent_results_total", "Intent results sent to clients, by code.")
	for i, n := range rejectCodeNames {
		ew.printf("matchgrain_edge_intent_results_total{code=%q} %d\n", n, m.intentResults[i].Load())
	}
	ew.printf("matchgrain_edge_intent_results_total{code=\"other\"} %d\n", m.intentResults[len(rejectCodeNames)].Load())
	counter("matchgrain_edge_intent_duplicates_total", "Intent results sent with duplicate=true.")
	ew.printf("matchgrain_edge_intent_duplicates_total %d\n", m.duplicates.Load())
	counter("matchgrain_edge_tickets_issued_total", "Tickets issued by the HTTP API.")
	ew.printf("matchgrain_edge_tickets_issued_total %d\n", m.ticketsIssued.Load())
	counter("matchgrain_edge_matches_created_total", "Matches created by the HTTP API.")
	ew.printf("matchgrain_edge_matches_created_total %d\n", m.matchesCreated.Load())

	counter("matchgrain_http_requests_total", "HTTP requests, by route and status code.")
	m.httpMu.Lock()
	keys := make([]httpKey, 0, len(m.httpReqs))
	for k := range m.httpReqs {
		keys = append(keys, k)
	}
	vals := make(map[httpKey]uint64, len(keys))
	for _, k := range keys {
		vals[k] = m.httpReqs[k]
	}
	m.httpMu.Unlock()
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].route != keys[j].route {
			return keys[i].route < keys[j].route
		}
		return keys[i].code < keys[j].code
	})
	for _, k := range keys {
		ew.printf("matchgrain_http_requests_total{route=%q,code=\"%s\"} %d\n", k.route, strconv.Itoa(k.code), vals[k])
	}
	return ew.err
}

type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) printf(format string, args ...any) {
	if e.err != nil {
		return
	}
	_, e.err = fmt.Fprintf(e.w, format, args...)
}

func (m *metrics) serveHTTP(w http.ResponseWriter, _ *http.Request, extra func(io.Writer) error) error {
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	if err := m.write(w); err != nil {
		return fmt.Errorf("write metrics: %w", err)
	}
	if extra != nil {
		if err := extra(w); err != nil {
			return fmt.Errorf("write extra metrics: %w", err)
		}
	}
	return nil
}

package edge

import (
	"fmt"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/matchgrain/matchgrain/internal/buckets"
	"github.com/matchgrain/matchgrain/internal/proccpu"
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

// metrics are the edge's Prometheus collectors. The label values of every
// bounded label are created up front, so each series is exported from the
// start (at 0) and dashboards see it before the first event; the hot path
// uses the pre-resolved children and never looks a label up.
type metrics struct {
	connections      [2]prometheus.Gauge
	connectionsTotal [2]prometheus.Counter
	framesIn         [2]prometheus.Counter
	framesOut        [2]prometheus.Counter
	bytesIn          [2]prometheus.Counter
	bytesOut         [2]prometheus.Counter
	closes           [reasonCount]prometheus.Counter
	intents          [intentCount]prometheus.Counter
	intentResults    [len(rejectCodeNames) + 1]prometheus.Counter // last: unrecognised code
	duplicates       prometheus.Counter
	intentDuration   prometheus.Histogram
	ticketsIssued    prometheus.Counter
	resumeTickets    prometheus.Counter
	matchesCreated   prometheus.Counter
	httpReqs         *prometheus.CounterVec
}

// newMetrics creates the edge's collectors and registers them with reg. The
// names, types and labels are a contract with dashboards and alerts
// (deploy/observability): add metrics, never rename or retype one.
func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{}
	perTransport := func(name, help string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, []string{"transport"})
	}
	conns := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "matchgrain_edge_connections", Help: "Open game connections.",
	}, []string{"transport"})
	vecs := []struct {
		vec *prometheus.CounterVec
		dst *[2]prometheus.Counter
	}{
		{perTransport("matchgrain_edge_connections_total", "Game connections accepted."), &m.connectionsTotal},
		{perTransport("matchgrain_edge_frames_in_total", "Frames received from clients."), &m.framesIn},
		{perTransport("matchgrain_edge_frames_out_total", "Frames written to clients."), &m.framesOut},
		{perTransport("matchgrain_edge_bytes_in_total", "Frame payload bytes received from clients."), &m.bytesIn},
		{perTransport("matchgrain_edge_bytes_out_total", "Frame payload bytes written to clients."), &m.bytesOut},
	}
	collectors := []prometheus.Collector{conns}
	for i, t := range transportNames {
		m.connections[i] = conns.WithLabelValues(t)
		for _, v := range vecs {
			v.dst[i] = v.vec.WithLabelValues(t)
		}
	}
	for _, v := range vecs {
		collectors = append(collectors, v.vec)
	}
	closes := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "matchgrain_edge_closes_total", Help: "Connections closed, by reason.",
	}, []string{"reason"})
	for r := CloseReason(1); r < reasonCount; r++ {
		m.closes[r] = closes.WithLabelValues(r.String())
	}
	m.closes[0] = closes.WithLabelValues(CloseReason(0).String())
	intents := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "matchgrain_edge_intents_total", Help: "Client intents, by what the edge did with them.",
	}, []string{"result"})
	for i, n := range intentResultNames {
		m.intents[i] = intents.WithLabelValues(n)
	}
	results := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "matchgrain_edge_intent_results_total", Help: "Intent results sent to clients, by code.",
	}, []string{"code"})
	for i, n := range rejectCodeNames {
		m.intentResults[i] = results.WithLabelValues(n)
	}
	m.intentResults[len(rejectCodeNames)] = results.WithLabelValues("other")
	m.duplicates = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "matchgrain_edge_intent_duplicates_total", Help: "Intent results sent with duplicate=true.",
	})
	m.intentDuration = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "matchgrain_edge_intent_duration_seconds",
		Help: "From an intent frame's arrival to the match's answer: the cluster hop, the grain, its durable " +
			"append and the push of the result to the sockets' writers; not the write itself, not the client.",
		Buckets: buckets.Latency,
	})
	m.ticketsIssued = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "matchgrain_edge_tickets_issued_total", Help: "Tickets issued by the HTTP API.",
	})
	m.resumeTickets = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "matchgrain_edge_resume_tickets_issued_total",
		Help: "Resume tickets sent to connected sessions that asked for them (ServerResumeTicket).",
	})
	m.matchesCreated = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "matchgrain_edge_matches_created_total", Help: "Matches created by the HTTP API.",
	})
	m.httpReqs = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "matchgrain_http_requests_total", Help: "HTTP requests, by route and status code.",
	}, []string{"route", "code"})
	collectors = append(collectors, closes, intents, results, m.duplicates, m.intentDuration, m.ticketsIssued, m.resumeTickets, m.matchesCreated, m.httpReqs)
	for _, c := range collectors {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register edge metrics: %w", err)
		}
	}
	return m, nil
}

func (m *metrics) httpRequest(route string, code int) {
	m.httpReqs.WithLabelValues(route, strconv.Itoa(code)).Inc()
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

// NewRegistry returns a Prometheus registry with the standard Go runtime and
// process collectors, for Config.Registry. Every part of a node registers its
// collectors in the one registry the edge serves at /metrics.
func NewRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	// The scheduler's metrics add go_sched_latencies_seconds: how long
	// goroutines wait to run once runnable. It is what an intent's hand-offs
	// (reader, grain, store writer, socket writer) wait for on a node short
	// of CPU, before any one of them shows as slow.
	reg.MustRegister(collectors.NewGoCollector(collectors.WithGoCollectorRuntimeMetrics(collectors.MetricsScheduler)),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if _, _, ok := proccpu.SelfSystemCalls(); ok {
		reg.MustRegister(systemCallsCollector{})
	}
	return reg
}

var (
	readCallsDesc = prometheus.NewDesc("matchgrain_process_read_syscalls_total",
		"Read-like system calls (read, readv, pread) this process has made, from /proc/self/io; "+
			"per intent (matchctl load) it is what the node's sockets cost the kernel.", nil, nil)
	writeCallsDesc = prometheus.NewDesc("matchgrain_process_write_syscalls_total",
		"Write-like system calls (write, writev, pwrite) this process has made, from /proc/self/io.", nil, nil)
)

// systemCallsCollector exports the process's read and write system calls,
// read once per scrape. The Go client's process collector has no such
// counters, and on a node whose sockets are its work they are the cost a
// change of batching moves first: a gRPC probe between members, an extra
// flush per frame.
type systemCallsCollector struct{}

// Describe implements prometheus.Collector.
func (systemCallsCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- readCallsDesc
	ch <- writeCallsDesc
}

// Collect implements prometheus.Collector.
func (systemCallsCollector) Collect(ch chan<- prometheus.Metric) {
	reads, writes, ok := proccpu.SelfSystemCalls()
	if !ok {
		return
	}
	ch <- prometheus.MustNewConstMetric(readCallsDesc, prometheus.CounterValue, float64(reads))
	ch <- prometheus.MustNewConstMetric(writeCallsDesc, prometheus.CounterValue, float64(writes))
}

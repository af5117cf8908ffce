package load

import (
	"fmt"
	"math"
	"net/http"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// serverHistograms are the histograms behind ServerTimes, in its field order.
var serverHistograms = [3]string{
	"matchgrain_edge_intent_duration_seconds",
	"matchgrain_store_append_duration_seconds",
	"matchgrain_store_statement_duration_seconds",
}

// histTotals are a histogram's sum and count at one scrape.
type histTotals struct{ sum, count float64 }

// bucketCount is one cumulative bucket of a histogram at one scrape.
type bucketCount struct{ le, count float64 }

// nodeScrape is one read of the node's /metrics.
type nodeScrape struct {
	cpu, rss float64
	// calls are the read and write system calls so far, where the node
	// exports them (haveCalls).
	calls     [2]float64
	haveCalls bool
	hist      [len(serverHistograms)]histTotals
	haveHist  bool // all of serverHistograms were there
	// buckets are each of serverHistograms' buckets, in ascending bounds,
	// +Inf last.
	buckets [len(serverHistograms)][]bucketCount
}

// quantile estimates the q-quantile of the observations that fell between
// two reads of one histogram's cumulative buckets (the same bounds in the
// same order), as histogram_quantile does: linearly within the bucket that
// holds it; in the +Inf bucket, the highest finite bound. ok is false when
// there were none.
func quantile(q float64, start, end []bucketCount) (v float64, ok bool) {
	if len(end) == 0 || len(start) != len(end) {
		return 0, false
	}
	count := func(i int) float64 { return end[i].count - start[i].count }
	total := count(len(end) - 1)
	if total <= 0 {
		return 0, false
	}
	rank := q * total
	lower, below := 0.0, 0.0
	for i, b := range end {
		c := count(i)
		if c < rank {
			lower, below = b.le, c
			continue
		}
		if math.IsInf(b.le, 1) {
			return lower, true
		}
		return lower + (b.le-lower)*(rank-below)/(c-below), true
	}
	return lower, true
}

// nodeWatch reads the node's standard process metrics
// (process_cpu_seconds_total, process_resident_memory_bytes) and its
// latency histograms, and keeps their values at the window's bounds.
type nodeWatch struct {
	url    string // "" or "off": read nothing
	client *http.Client

	ok                  bool
	rssStart, peak, rss float64
	cpu                 float64
	cpuStart, cpuEnd    float64
	measuring           bool
	// calls are the latest read and write system-call counts and their
	// reads at the window's bounds; callsOK says every read had them.
	calls, callsStart, callsEnd [2]float64
	callsOK                     bool
	// hist is the latest read of serverHistograms; histStart and histEnd
	// bound the window; histOK says every read in the window had them.
	hist, histStart, histEnd [len(serverHistograms)]histTotals
	histOK                   bool
	// buckets, and their reads at the window's bounds, for the
	// percentiles.
	buckets, bucketsStart, bucketsEnd [len(serverHistograms)][]bucketCount
}

func newNodeWatch(url string) *nodeWatch {
	return &nodeWatch{url: url, client: &http.Client{Timeout: 2 * time.Second}}
}

// sample reads the metrics once; a failed read leaves the last values.
func (n *nodeWatch) sample() {
	if n.url == "" || n.url == "off" {
		return
	}
	sc, err := scrapeNode(n.client, n.url)
	if err != nil {
		return
	}
	if !n.ok {
		n.rssStart = sc.rss
		n.histOK = sc.haveHist
		n.callsOK = sc.haveCalls
	}
	n.ok = true
	n.cpu, n.rss = sc.cpu, sc.rss
	n.calls, n.callsOK = sc.calls, n.callsOK && sc.haveCalls
	n.hist, n.buckets = sc.hist, sc.buckets
	n.histOK = n.histOK && sc.haveHist
	if n.measuring {
		n.peak = max(n.peak, sc.rss)
	}
}

func (n *nodeWatch) markStart() {
	n.sample()
	n.cpuStart, n.peak, n.measuring = n.cpu, n.rss, true
	n.callsStart = n.calls
	n.histStart, n.bucketsStart = n.hist, n.buckets
}

func (n *nodeWatch) markEnd() {
	n.cpuEnd, n.histEnd, n.bucketsEnd = n.cpu, n.hist, n.buckets
	n.callsEnd = n.calls
	n.measuring = false // the peak RSS is the window's too
}

// serverTimes are the window's mean times in milliseconds, or nil where the
// node does not export the histograms.
func (n *nodeWatch) serverTimes() *ServerTimes {
	if !n.histOK {
		return nil
	}
	var ms [len(serverHistograms)]float64
	for i := range ms {
		if c := n.histEnd[i].count - n.histStart[i].count; c > 0 {
			ms[i] = (n.histEnd[i].sum - n.histStart[i].sum) * 1000 / c
		}
	}
	t := &ServerTimes{Intent: ms[0], Append: ms[1], Statement: ms[2]}
	pct := func(q float64, i int) float64 {
		p, _ := quantile(q, n.bucketsStart[i], n.bucketsEnd[i])
		return p * 1000
	}
	t.IntentP50, t.IntentP99 = pct(0.5, 0), pct(0.99, 0)
	t.AppendP99, t.StatementP99 = pct(0.99, 1), pct(0.99, 2)
	return t
}

func (n *nodeWatch) usage(intents int) *NodeUsage {
	if !n.ok {
		return nil
	}
	u := &NodeUsage{CPUSeconds: n.cpuEnd - n.cpuStart, PeakRSSBytes: n.peak, RSSBytesAtStart: n.rssStart,
		ServerMs: n.serverTimes()}
	if intents > 0 {
		u.CPUMsPerIntent = u.CPUSeconds * 1000 / float64(intents)
		if n.callsOK {
			u.ReadCallsPerIntent = (n.callsEnd[0] - n.callsStart[0]) / float64(intents)
			u.WriteCallsPerIntent = (n.callsEnd[1] - n.callsStart[1]) / float64(intents)
		}
	}
	return u
}

// scrapeNode fetches a Prometheus text exposition and returns the two
// process gauges the Go client's process collector exports, the node's
// read and write system calls where it exports them, and the sums,
// counts and buckets of serverHistograms where present.
func scrapeNode(c *http.Client, url string) (nodeScrape, error) {
	var sc nodeScrape
	resp, err := c.Get(url)
	if err != nil {
		return sc, fmt.Errorf("scrape %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return sc, fmt.Errorf("scrape %s: %s", url, resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		return sc, fmt.Errorf("scrape %s: %w", url, err)
	}
	var haveCPU, haveRSS bool
	sc.cpu, haveCPU = scalar(fams["process_cpu_seconds_total"])
	sc.rss, haveRSS = scalar(fams["process_resident_memory_bytes"])
	if !haveCPU || !haveRSS {
		return sc, fmt.Errorf("scrape %s: no process_cpu_seconds_total or process_resident_memory_bytes", url)
	}
	reads, haveReads := scalar(fams["matchgrain_process_read_syscalls_total"])
	writes, haveWrites := scalar(fams["matchgrain_process_write_syscalls_total"])
	sc.calls, sc.haveCalls = [2]float64{reads, writes}, haveReads && haveWrites
	sc.haveHist = true
	for i, name := range serverHistograms {
		h := histogram(fams[name])
		if h == nil {
			sc.haveHist = false
			continue
		}
		sc.hist[i] = histTotals{sum: h.GetSampleSum(), count: sampleCount(h)}
		for _, b := range h.GetBucket() {
			sc.buckets[i] = append(sc.buckets[i], bucketCount{le: b.GetUpperBound(), count: cumulative(b)})
		}
	}
	return sc, nil
}

// only is the family's one unlabelled series, or nil.
func only(f *dto.MetricFamily) *dto.Metric {
	if f == nil || len(f.GetMetric()) != 1 || len(f.GetMetric()[0].GetLabel()) != 0 {
		return nil
	}
	return f.GetMetric()[0]
}

// scalar is the value of a family's one unlabelled counter, gauge or
// untyped series.
func scalar(f *dto.MetricFamily) (float64, bool) {
	m := only(f)
	switch {
	case m == nil:
		return 0, false
	case m.Counter != nil:
		return m.GetCounter().GetValue(), true
	case m.Gauge != nil:
		return m.GetGauge().GetValue(), true
	case m.Untyped != nil:
		return m.GetUntyped().GetValue(), true
	}
	return 0, false
}

// histogram is a family's one unlabelled histogram, or nil.
func histogram(f *dto.MetricFamily) *dto.Histogram {
	if m := only(f); m != nil {
		return m.GetHistogram()
	}
	return nil
}

// sampleCount and cumulative read counts the parser keeps as integers or,
// when one is fractional, as floats.
func sampleCount(h *dto.Histogram) float64 {
	if h.SampleCountFloat != nil {
		return h.GetSampleCountFloat()
	}
	return float64(h.GetSampleCount())
}

func cumulative(b *dto.Bucket) float64 {
	if b.CumulativeCountFloat != nil {
		return b.GetCumulativeCountFloat()
	}
	return float64(b.GetCumulativeCount())
}

// nodeWatches are the nodes a run reads: one, or every member of a cluster.
type nodeWatches []*nodeWatch

func (ns nodeWatches) sample() {
	for _, n := range ns {
		n.sample()
	}
}

func (ns nodeWatches) markStart() {
	for _, n := range ns {
		n.markStart()
	}
}

func (ns nodeWatches) markEnd() {
	for _, n := range ns {
		n.markEnd()
	}
}

// usage is the one node's usage, or the members' summed: CPU, RSS, but no
// server times (each member's histograms see only its share).
func (ns nodeWatches) usage(intents int) *NodeUsage {
	if len(ns) == 1 {
		return ns[0].usage(intents)
	}
	var sum *NodeUsage
	allCalls := true
	for _, n := range ns {
		allCalls = allCalls && n.callsOK
		u := n.usage(intents)
		if u == nil {
			return nil // a member's figures missing: no sum
		}
		if sum == nil {
			sum = &NodeUsage{}
		}
		sum.CPUSeconds += u.CPUSeconds
		sum.CPUMsPerIntent += u.CPUMsPerIntent
		sum.ReadCallsPerIntent += u.ReadCallsPerIntent
		sum.WriteCallsPerIntent += u.WriteCallsPerIntent
		sum.PeakRSSBytes += u.PeakRSSBytes
		sum.RSSBytesAtStart += u.RSSBytesAtStart
	}
	if sum != nil && !allCalls { // a part of a sum is no sum
		sum.ReadCallsPerIntent, sum.WriteCallsPerIntent = 0, 0
	}
	return sum
}

package actors

import (
	"sync/atomic"
	"time"
)

// Metrics counts what the grains of one member do; the edge renders them.
type Metrics struct {
	ActiveGrains    atomic.Int64
	IntentsAccepted atomic.Int64
	IntentsRejected atomic.Int64
	Appends         atomic.Int64
	AppendErrors    atomic.Int64
	// AppendMicros is the sum of append latencies, for a mean.
	AppendMicros atomic.Int64
}

func (m *Metrics) observeAppend(d time.Duration, err error) {
	m.Appends.Add(1)
	m.AppendMicros.Add(d.Microseconds())
	if err != nil {
		m.AppendErrors.Add(1)
	}
}

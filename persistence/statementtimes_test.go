package persistence

import (
	"testing"
	"time"
)

// TestStatementTimes: a time on a bound counts in that bound's bucket, one
// above every bound only in the count, and the buckets come out cumulative.
func TestStatementTimes(t *testing.T) {
	var st statementTimes
	for _, d := range []time.Duration{
		0,
		500 * time.Microsecond, // on the first bound
		501 * time.Microsecond, // just above it
		3 * time.Millisecond,   // between 2 and 5 ms
		5 * time.Second,        // on the last bound
		10 * time.Second,       // above every bound
	} {
		st.observe(d)
	}
	var got GroupCommitStats
	st.fill(&got)
	want := [len(StatementBounds)]uint64{2, 3, 3, 4, 4, 4, 4, 4, 4, 4, 4, 4, 5}
	if got.StatementBuckets != want {
		t.Errorf("buckets = %v, want %v", got.StatementBuckets, want)
	}
	if got.Statements != 6 {
		t.Errorf("count = %d, want 6", got.Statements)
	}
	wantSum := (1001*time.Microsecond + 3*time.Millisecond + 15*time.Second).Seconds()
	if got.StatementSeconds != wantSum {
		t.Errorf("sum = %v s, want %v", got.StatementSeconds, wantSum)
	}
}

package proccpu

import (
	"os"
	"testing"
)

// TestSelfSystemCalls: writes and reads of a pipe show in the counts, each
// one call at least.
func TestSelfSystemCalls(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	reads0, writes0, ok := SelfSystemCalls()
	if !ok {
		t.Fatal("no counts in /proc/self/io")
	}
	const calls = 50
	buf := []byte{1}
	for range calls {
		if _, err := w.Write(buf); err != nil {
			t.Fatal(err)
		}
		if _, err := r.Read(buf); err != nil {
			t.Fatal(err)
		}
	}
	reads1, writes1, ok := SelfSystemCalls()
	if !ok {
		t.Fatal("no counts in /proc/self/io the second time")
	}
	if got := reads1 - reads0; got < calls {
		t.Errorf("%d reads counted, want at least %d", got, calls)
	}
	if got := writes1 - writes0; got < calls {
		t.Errorf("%d writes counted, want at least %d", got, calls)
	}
}

package clustertest

import (
	"net"
	"strconv"
	"testing"
	"time"
)

// Eventually calls f every step until it returns nil, and fails the test with
// f's last error if that has not happened within timeout. It replaces sleeps:
// the wait is as short as the condition allows.
func Eventually(t testing.TB, timeout, step time.Duration, f func() error) {
	t.Helper()
	if err := Poll(timeout, step, f); err != nil {
		t.Fatalf("condition not met after %v: %v", timeout, err)
	}
}

// Poll is Eventually without a test: it returns f's last error, or nil.
func Poll(timeout, step time.Duration, f func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := f()
		if err == nil {
			return nil
		}
		if time.Now().Add(step).After(deadline) {
			return err
		}
		time.Sleep(step)
	}
}

// FreeAddr returns "127.0.0.1:port" with a port that was free for both TCP
// and UDP a moment ago (memberlist needs both). Another process may take it
// before it is used; prefer port 0 where the API reports the bound address.
func FreeAddr(t testing.TB) string {
	t.Helper()
	for range 20 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatalf("free port: %v", err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		u, err := net.ListenPacket("udp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		_ = l.Close() // only probing: the close error changes nothing
		if err != nil {
			continue
		}
		_ = u.Close()
		return net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	}
	t.Fatal("free port: no port free for both TCP and UDP after 20 tries")
	return ""
}

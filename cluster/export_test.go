package cluster

// RepliesInFlight counts the local requests whose reply process is still
// registered (for tests of the reply table).
func (n *Node) RepliesInFlight() int {
	n.replies.mu.Lock()
	defer n.replies.mu.Unlock()
	return len(n.replies.m)
}

// AttemptSender is attemptSender, for the deadline tests.
type AttemptSender = attemptSender

// NewAttemptSender is newAttemptSender, for the deadline tests.
var NewAttemptSender = newAttemptSender

// End is attemptSender.end, for the deadline tests.
func (s *attemptSender) End() { s.end() }

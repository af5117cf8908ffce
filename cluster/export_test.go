package cluster

// RepliesInFlight counts the local requests whose reply process is still
// registered (for tests of the reply table).
func (n *Node) RepliesInFlight() int {
	n.replies.mu.Lock()
	defer n.replies.mu.Unlock()
	return len(n.replies.m)
}

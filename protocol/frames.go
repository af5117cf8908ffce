package protocol

// ClientFrameKind is the union key of a client→server frame (docs/protocol.md §3.1).
type ClientFrameKind int

// Client frame keys.
const (
	ClientHelloKind  ClientFrameKind = 0
	ClientIntentKind ClientFrameKind = 1
	ClientResyncKind ClientFrameKind = 2
	ClientPingKind   ClientFrameKind = 3
	ClientPongKind   ClientFrameKind = 4
	ClientLeaveKind  ClientFrameKind = 5
)

// ServerFrameKind is the union key of a server→client frame (docs/protocol.md §3.2).
type ServerFrameKind int

// Server frame keys.
const (
	ServerHelloKind        ServerFrameKind = 0
	ServerSnapshotKind     ServerFrameKind = 1
	ServerEventsKind       ServerFrameKind = 2
	ServerIntentResultKind ServerFrameKind = 3
	ServerClockKind        ServerFrameKind = 4
	ServerPingKind         ServerFrameKind = 5
	ServerPongKind         ServerFrameKind = 6
	ServerErrorKind        ServerFrameKind = 7
	ServerResumeTicketKind ServerFrameKind = 8
)

// ClientFrame is a frame a client sends: one of the Client* types below.
type ClientFrame interface {
	ClientFrameKind() ClientFrameKind
}

// ServerFrame is a frame the server sends: one of the Server* types below.
type ServerFrame interface {
	ServerFrameKind() ServerFrameKind
}

// ClientHello opens a session.
type ClientHello struct {
	ProtocolVersion int
	Ticket          string
	ClientBuild     string
	ResumeFromSeq   int64
	// ResumeTickets asks the server for ServerResumeTicket frames
	// (docs/protocol.md §4.7). It is opt-in because a client that does not
	// know that frame would have to treat it as malformed.
	ResumeTickets bool
}

// ClientIntent carries one intent. Intent is nil when the intent key was
// unknown (see UnknownIntentError); the edge answers NotSupported then.
type ClientIntent struct {
	IntentID   string
	BasedOnSeq int64
	Intent     Intent
}

// ClientResync asks for events from FromSeq (inclusive) or a snapshot.
type ClientResync struct {
	FromSeq      int64
	FullSnapshot bool
}

// ClientPing asks for a ServerPong (also a clock-offset sample).
type ClientPing struct {
	Nonce        int64
	ClientTimeMs int64
}

// ClientPong answers a ServerPing.
type ClientPong struct {
	Nonce int64
}

// ClientLeave ends the session on purpose; the match waits for the player.
type ClientLeave struct {
	Reason string
}

// ServerHello accepts a session.
type ServerHello struct {
	ProtocolVersion int
	MatchID         string
	PlayerIndex     int
	Resumed         bool
	EventSeq        int64
	ServerTimeMs    int64
}

// ServerSnapshot is the full view at View.EventSeq.
type ServerSnapshot struct {
	View MatchView
}

// ServerEvents carries the events FromSeq..ToSeq visible to this seat.
type ServerEvents struct {
	FromSeq int64
	ToSeq   int64
	Events  []EventEnvelope
}

// ServerIntentResult answers one ClientIntent.
type ServerIntentResult struct {
	IntentID  string
	Accepted  bool
	Code      IntentRejectCode
	Reason    string
	EventSeq  int64
	Duplicate bool
}

// ServerClock is the decision clock.
type ServerClock struct {
	Clock    ClockView
	EventSeq int64
}

// ServerPing asks the client for a ClientPong.
type ServerPing struct {
	Nonce        int64
	ServerTimeMs int64
}

// ServerPong answers a ClientPing.
type ServerPong struct {
	Nonce        int64
	ServerTimeMs int64
}

// ServerError reports an error; Fatal errors are followed by a close.
type ServerError struct {
	Code     ErrorCode
	Message  string
	Fatal    bool
	EventSeq int64
}

// ClientFrameKind implements ClientFrame.
func (*ClientHello) ClientFrameKind() ClientFrameKind { return ClientHelloKind }

// ClientFrameKind implements ClientFrame.
func (*ClientIntent) ClientFrameKind() ClientFrameKind { return ClientIntentKind }

// ClientFrameKind implements ClientFrame.
func (*ClientResync) ClientFrameKind() ClientFrameKind { return ClientResyncKind }

// ClientFrameKind implements ClientFrame.
func (*ClientPing) ClientFrameKind() ClientFrameKind { return ClientPingKind }

// ClientFrameKind implements ClientFrame.
func (*ClientPong) ClientFrameKind() ClientFrameKind { return ClientPongKind }

// ClientFrameKind implements ClientFrame.
func (*ClientLeave) ClientFrameKind() ClientFrameKind { return ClientLeaveKind }

// ServerResumeTicket gives a session that asked for it (ClientHello.
// ResumeTickets) a single-use ticket for its own seat, so that it can
// reconnect without asking the service that issued its first ticket
// (docs/protocol.md §4.7). Ticket is a bearer credential: never log it.
type ServerResumeTicket struct {
	Ticket      string
	ExpiresAtMs int64
}

// ServerFrameKind implements ServerFrame.
func (*ServerHello) ServerFrameKind() ServerFrameKind { return ServerHelloKind }

// ServerFrameKind implements ServerFrame.
func (*ServerSnapshot) ServerFrameKind() ServerFrameKind { return ServerSnapshotKind }

// ServerFrameKind implements ServerFrame.
func (*ServerEvents) ServerFrameKind() ServerFrameKind { return ServerEventsKind }

// ServerFrameKind implements ServerFrame.
func (*ServerIntentResult) ServerFrameKind() ServerFrameKind { return ServerIntentResultKind }

// ServerFrameKind implements ServerFrame.
func (*ServerClock) ServerFrameKind() ServerFrameKind { return ServerClockKind }

// ServerFrameKind implements ServerFrame.
func (*ServerPing) ServerFrameKind() ServerFrameKind { return ServerPingKind }

// ServerFrameKind implements ServerFrame.
func (*ServerPong) ServerFrameKind() ServerFrameKind { return ServerPongKind }

// ServerFrameKind implements ServerFrame.
func (*ServerError) ServerFrameKind() ServerFrameKind { return ServerErrorKind }

// ServerFrameKind implements ServerFrame.
func (*ServerResumeTicket) ServerFrameKind() ServerFrameKind { return ServerResumeTicketKind }

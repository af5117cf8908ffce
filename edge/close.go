package edge

import "github.com/matchgrain/matchgrain/protocol"

// CloseReason is why the edge ended a connection. Its String form is a
// stable snake_case label for metrics and logs.
type CloseReason int

// Close reasons. Each maps to one WebSocket close code, and on TCP to the
// final fatal ServerError that stands in for it (docs/protocol.md §6, §9.6).
const (
	// ReasonClientLeave: the client sent ClientLeave; close 1000.
	ReasonClientLeave CloseReason = iota + 1
	// ReasonPeerClosed: the client closed or reset the connection; nothing is sent.
	ReasonPeerClosed
	// ReasonHelloTimeout: no ClientHello within HelloTimeout; MalformedFrame, 4400.
	ReasonHelloTimeout
	// ReasonMalformedFrame: garbage, a text or empty message, or a frame
	// that does not decode; MalformedFrame, 4400.
	ReasonMalformedFrame
	// ReasonFrameTooLarge: a frame over protocol.MaxFrameBytes; MalformedFrame, 4400.
	ReasonFrameTooLarge
	// ReasonProtocolViolation: a well-formed frame out of place (the first
	// frame is not ClientHello, a second ClientHello); MalformedFrame, 4400.
	ReasonProtocolViolation
	// ReasonUnsupportedVersion: ClientHello.protocolVersion ≠ 1; UnsupportedVersion, 4410.
	ReasonUnsupportedVersion
	// ReasonInvalidTicket: a forged or unreadable ticket; InvalidTicket, 4401.
	ReasonInvalidTicket
	// ReasonTicketExpired: a ticket past its expiry; TicketExpired, 4401.
	ReasonTicketExpired
	// ReasonTicketUsed: a ticket that already opened a seat; InvalidTicket, 4401.
	ReasonTicketUsed
	// ReasonMatchNotFound: the ticket's match does not exist; MatchNotFound, 4401.
	ReasonMatchNotFound
	// ReasonHeartbeatTimeout: no client frame for HeartbeatTimeout; 4408
	// (TCP: HeartbeatTimeout).
	ReasonHeartbeatTimeout
	// ReasonReplaced: another connection took the seat; 4409 (TCP: SessionReplaced).
	ReasonReplaced
	// ReasonRateLimited: sustained abuse of the rate limit; RateLimited, 4413.
	ReasonRateLimited
	// ReasonSlowConsumer: the outbound queue overflowed; the connection is
	// dropped without further frames.
	ReasonSlowConsumer
	// ReasonWriteFailed: a write did not finish within WriteTimeout, or
	// failed; the connection is dropped without further frames.
	ReasonWriteFailed
	// ReasonUnavailable: the match could not be reached; Internal, 4500, so
	// that the client reconnects and resumes.
	ReasonUnavailable
	// ReasonInternal: an unexpected server error; Internal, 4500.
	ReasonInternal
	// ReasonShutdown: this edge is shutting down; 1001 (TCP: Internal).
	ReasonShutdown
	// ReasonMatchShutdown: the match's node drains; 1001 (TCP: Internal).
	ReasonMatchShutdown
	// ReasonConnLimitAddress: refused at accept, the client address has
	// MaxConnectionsPerAddress open; HTTP 429, TCP: RateLimited.
	ReasonConnLimitAddress
	// ReasonConnLimitTotal: refused at accept, the edge has MaxConnections
	// open; HTTP 503, TCP: RateLimited.
	ReasonConnLimitTotal
	// ReasonHandshakeLimit: refused at accept, MaxHandshakes connections
	// have not finished their handshake yet; HTTP 503, TCP: RateLimited.
	ReasonHandshakeLimit
	// ReasonSpectatorsFull: a spectator's match has as many spectators as
	// it allows; SpectatorsFull, 4429 (docs/protocol.md §14.7).
	ReasonSpectatorsFull

	reasonCount // one past the last reason; sizes the metrics arrays
)

// Close codes the protocol package does not name.
const (
	closeGoingAway = 1001
	// noErrorCode marks a reason that sends no ServerError.
	noErrorCode protocol.ErrorCode = -1
)

type reasonInfo struct {
	label string
	// code is the WebSocket close code; 0 means none is sent (the
	// connection is gone or is being dropped).
	code int
	// errCode is the ServerError sent on both transports before closing.
	errCode protocol.ErrorCode
	// tcpOnly is the ServerError sent on TCP only, where it stands in for a
	// close code that has no ErrorCode of its own.
	tcpOnly protocol.ErrorCode
	// text is the close reason and ServerError message: short ASCII, no secrets.
	text string
}

var reasons = [reasonCount]reasonInfo{
	0:                        {"unknown", protocol.CloseInternal, protocol.ErrorInternal, noErrorCode, "internal error"},
	ReasonClientLeave:        {"client_leave", protocol.CloseNormal, noErrorCode, noErrorCode, "bye"},
	ReasonPeerClosed:         {"peer_closed", 0, noErrorCode, noErrorCode, ""},
	ReasonHelloTimeout:       {"hello_timeout", protocol.CloseProtocolViolation, protocol.ErrorMalformedFrame, noErrorCode, "hello timeout"},
	ReasonMalformedFrame:     {"malformed_frame", protocol.CloseProtocolViolation, protocol.ErrorMalformedFrame, noErrorCode, "malformed frame"},
	ReasonFrameTooLarge:      {"frame_too_large", protocol.CloseProtocolViolation, protocol.ErrorMalformedFrame, noErrorCode, "frame too large"},
	ReasonProtocolViolation:  {"protocol_violation", protocol.CloseProtocolViolation, protocol.ErrorMalformedFrame, noErrorCode, "unexpected frame"},
	ReasonUnsupportedVersion: {"unsupported_version", protocol.CloseUnsupportedVersion, protocol.ErrorUnsupportedVersion, noErrorCode, "unsupported version"},
	ReasonInvalidTicket:      {"invalid_ticket", protocol.CloseTicket, protocol.ErrorInvalidTicket, noErrorCode, "invalid ticket"},
	ReasonTicketExpired:      {"ticket_expired", protocol.CloseTicket, protocol.ErrorTicketExpired, noErrorCode, "ticket expired"},
	ReasonTicketUsed:         {"ticket_used", protocol.CloseTicket, protocol.ErrorInvalidTicket, noErrorCode, "invalid ticket"},
	ReasonMatchNotFound:      {"match_not_found", protocol.CloseTicket, protocol.ErrorMatchNotFound, noErrorCode, "match not found"},
	ReasonHeartbeatTimeout:   {"heartbeat_timeout", protocol.CloseHeartbeatTimeout, noErrorCode, protocol.ErrorHeartbeatTimeout, "heartbeat timeout"},
	ReasonReplaced:           {"replaced", protocol.CloseReplaced, noErrorCode, protocol.ErrorSessionReplaced, "session replaced"},
	ReasonRateLimited:        {"rate_limited", protocol.CloseRateLimited, protocol.ErrorRateLimited, noErrorCode, "rate limited"},
	ReasonSlowConsumer:       {"slow_consumer", 0, noErrorCode, noErrorCode, ""},
	ReasonWriteFailed:        {"write_failed", 0, noErrorCode, noErrorCode, ""},
	ReasonUnavailable:        {"unavailable", protocol.CloseInternal, protocol.ErrorInternal, noErrorCode, "match unavailable"},
	ReasonInternal:           {"internal", protocol.CloseInternal, protocol.ErrorInternal, noErrorCode, "internal error"},
	ReasonShutdown:           {"shutdown", closeGoingAway, noErrorCode, protocol.ErrorInternal, "server shutting down"},
	ReasonMatchShutdown:      {"match_shutdown", closeGoingAway, noErrorCode, protocol.ErrorInternal, "match moving"},
	ReasonConnLimitAddress:   {"conn_limit_address", 0, noErrorCode, protocol.ErrorRateLimited, "too many from this address"},
	ReasonConnLimitTotal:     {"conn_limit_total", 0, noErrorCode, protocol.ErrorRateLimited, "server full"},
	ReasonHandshakeLimit:     {"handshake_limit", 0, noErrorCode, protocol.ErrorRateLimited, "too many handshakes"},
	ReasonSpectatorsFull:     {"spectators_full", protocol.CloseSpectatorsFull, protocol.ErrorSpectatorsFull, noErrorCode, "spectators full"},
}

func (r CloseReason) info() reasonInfo {
	if r <= 0 || r >= reasonCount {
		return reasons[0]
	}
	return reasons[r]
}

// String returns the metric label of r ("heartbeat_timeout").
func (r CloseReason) String() string { return r.info().label }

// CloseCode returns the WebSocket close code sent for r, or 0 when the
// connection is dropped without a close frame.
func (r CloseReason) CloseCode() int { return r.info().code }

// errorFrame returns the fatal ServerError sent before closing for r on the
// given transport, or false when none is sent.
func (r CloseReason) errorFrame(tcp bool, eventSeq int64) (*protocol.ServerError, bool) {
	in := r.info()
	code := in.errCode
	if code == noErrorCode && tcp {
		code = in.tcpOnly
	}
	if code == noErrorCode {
		return nil, false
	}
	return &protocol.ServerError{Code: code, Message: in.text, Fatal: true, EventSeq: eventSeq}, true
}

// abortive reports whether r drops the connection without a goodbye: the
// peer is gone or is not reading.
func (r CloseReason) abortive() bool {
	return r == ReasonPeerClosed || r == ReasonSlowConsumer || r == ReasonWriteFailed
}

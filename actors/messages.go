package actors

import (
	"fmt"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/matchgrain/matchgrain/cluster/envelope"
	"github.com/matchgrain/matchgrain/protocol"
)

// MatchKind is the cluster kind of match grains.
const MatchKind = "match"

// The messages below travel between an edge seat (edge/grains) and a
// match grain, wrapped in envelope.Msg. They are internal to the cluster:
// members trust each other, clients never produce them directly.

// Wake activates a match grain (after creation, or by the reclaimer for
// orphaned matches) so that its timers run without any client.
type Wake struct{}

// AttachSeat attaches an edge seat, by its PID, to a seat. A first attach carries a ticket
// id that the grain consumes durably; a re-attach (the grain moved while the
// connection stayed up) carries none.
type AttachSeat struct {
	Seat            int
	TicketID        string
	TicketExpiresMs int64
	ResumeFromSeq   int64
	Reattach        bool
	SessionAddr     string
	SessionID       string
	// SeenEpoch is the newest activation epoch the seat had frames from (a
	// re-attach); an older activation that receives it knows it was
	// superseded and stops. The same field on the seat's other messages.
	SeenEpoch int64 `msgpack:",omitempty"`
}

// SubmitIntent carries one intent of an attached seat, decoded once, by
// whoever took it in (the edge's session from the client's frame, a bot
// from its choice): a grain on the sender's member gets the value itself.
// It crosses the wire as Frame, the intent's canonical ClientIntent frame,
// encoded only then (EncodeMsgpack), and the receiving grain decodes it
// once. The grain persists the canonical frame: Frame when it came with
// one, else the encoding of Intent, made only for an intent it logs.
type SubmitIntent struct {
	Seat      int
	SessionID string
	// Frame is the intent's encoded ClientIntent frame: what a remote
	// sender's Intent became on the wire, or what a sender that holds only
	// the frame gives.
	Frame []byte
	// Intent is the decoded intent; nil means the grain decodes Frame.
	Intent    *protocol.ClientIntent `msgpack:"-"`
	SeenEpoch int64                  `msgpack:",omitempty"`
}

// submitIntentWire is SubmitIntent's wire form: the same fields, encoded
// the default way, without the method that fills Frame.
type submitIntentWire SubmitIntent

// EncodeMsgpack implements msgpack.CustomEncoder for the envelope's
// serialization to a remote grain: Frame is the canonical frame of Intent
// when the sender gave only the value. The fields on the wire are the same
// as before Intent existed, so members of both kinds understand each other.
func (m *SubmitIntent) EncodeMsgpack(enc *msgpack.Encoder) error {
	w := submitIntentWire(*m)
	if w.Frame == nil && m.Intent != nil {
		f, err := protocol.EncodeClientFrame(m.Intent)
		if err != nil {
			return fmt.Errorf("encode intent %q of seat %d: %w", m.Intent.IntentID, m.Seat, err)
		}
		w.Frame = f
	}
	return enc.Encode(&w)
}

// ResyncSeat asks for events from FromSeq (inclusive) or a snapshot.
type ResyncSeat struct {
	Seat      int
	SessionID string
	FromSeq   int64
	Full      bool
	SeenEpoch int64 `msgpack:",omitempty"`
}

// DetachSeat ends an attachment (the connection closed).
type DetachSeat struct {
	Seat      int
	SessionID string
	Leave     bool
}

// SeatPing is an edge's keep-alive for its seats of one match: Seat and
// SessionID name the first, More the others. The reply is OK when the grain
// runs; its NotAttached lists the seats (0 the first, i the More[i-1]) the
// grain no longer holds.
type SeatPing struct {
	Seat      int
	SessionID string
	More      []PingedSeat
	// SeenEpoch is the newest epoch any of the pinged seats had frames from.
	SeenEpoch int64 `msgpack:",omitempty"`
}

// PingedSeat is one more seat of a SeatPing.
type PingedSeat struct {
	Seat      int
	SessionID string
}

// NameSeat gives a guest seat (MatchSpec.Guests) the name its player chose
// when redeeming the invite. The first name stands: a later NameSeat for
// the same seat (a retried redemption) changes nothing and is answered OK.
type NameSeat struct {
	Seat int
	Name string
}

// ReplyCode classifies a grain's Reply.
type ReplyCode int

// Reply codes.
const (
	ReplyOK ReplyCode = iota
	ReplyNotFound
	ReplyTicketUsed
	ReplyNotAttached
	ReplyUnavailable
	ReplyBadRequest
	// ReplyReplaced: a re-attach found another connection on the seat; the
	// re-attaching one was replaced and must close (4409).
	ReplyReplaced
	// ReplySpectatorsFull: the match has GrainDeps.MaxSpectators
	// spectators already (close 4429, docs/protocol.md §14.7).
	ReplySpectatorsFull
)

// Reply answers every request to a grain.
type Reply struct {
	Code    ReplyCode
	Message string
	Epoch   int64
	LastSeq int64
	// NotAttached answers a SeatPing: the indexes of its seats that the
	// grain does not hold.
	NotAttached []int `msgpack:",omitempty"`
	// Status answers an Inspect.
	Status *MatchStatus `msgpack:",omitempty"`
	// NotOwner marks a ReplyUnavailable from an activation this member
	// refused because its view names another owner: the caller's view and
	// this member's differ for the moment (one saw a member leave or join
	// before the other), and agree again within a detection time.
	NotOwner bool `msgpack:",omitempty"`
}

// ActivationMoving says whether the activation that answered is going away
// (ReplyUnavailable: stopping, fenced, or refusing to activate): the
// cluster's request then drops its cached PID and retries at the next
// activation (cluster.Moving), the one retry of a grain call.
func (r *Reply) ActivationMoving() (reason string, moving bool) {
	return r.Message, r.Code == ReplyUnavailable
}

// RefusedByView says the activation was refused because the answering
// member's view names another owner (cluster.ViewRefusal): the cluster's
// request retries such a refusal quickly, a bounded number of times.
func (r *Reply) RefusedByView() bool {
	return r.Code == ReplyUnavailable && r.NotOwner
}

// OutFrame is one encoded server frame for a seat. ToSeq is the last event
// seq the frame brings the seat to (events and snapshots), 0 for others, so a
// seat can drop a batch it already has.
type OutFrame struct {
	Data  []byte
	ToSeq int64
}

// SeatFrames pushes frames from a grain to one edge seat, in order.
// Initial marks the frames that answer an AttachSeat, Requested those that
// answer a ResyncSeat: only unrequested event batches may be dropped as
// duplicates by the seat.
type SeatFrames struct {
	Epoch     int64
	Initial   bool
	Requested bool
	Frames    []OutFrame
}

// SeatDetached tells an edge seat that the grain dropped its attachment.
type SeatDetached struct {
	Epoch  int64
	Reason DetachReason
}

// DetachReason says why a seat lost its attachment.
type DetachReason int

// Detach reasons.
const (
	// DetachReplaced: another connection took the seat (close 4409).
	DetachReplaced DetachReason = iota + 1
	// DetachUnavailable: the grain is gone and re-attaching failed; the
	// client should reconnect and resume (close 4500).
	DetachUnavailable
	// DetachShutdown: this node is draining.
	DetachShutdown
)

func init() {
	envelope.Register("mg.Wake", func() any { return &Wake{} })
	envelope.Register("mg.Inspect", func() any { return &Inspect{} })
	envelope.Register("mg.AttachSeat", func() any { return &AttachSeat{} })
	envelope.Register("mg.SubmitIntent", func() any { return &SubmitIntent{} })
	envelope.Register("mg.ResyncSeat", func() any { return &ResyncSeat{} })
	envelope.Register("mg.DetachSeat", func() any { return &DetachSeat{} })
	envelope.Register("mg.SeatPing", func() any { return &SeatPing{} })
	envelope.Register("mg.Reply", func() any { return &Reply{} })
	envelope.Register("mg.SeatFrames", func() any { return &SeatFrames{} })
	envelope.Register("mg.SeatDetached", func() any { return &SeatDetached{} })
	envelope.Register("mg.NameSeat", func() any { return &NameSeat{} })
}

package edge

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/matchgrain/matchgrain/protocol"
)

// Ticket format, version 1. A ticket is base64url without padding (RFC 4648
// §5) of
//
//	offset  size  field
//	0       1     format version, 1
//	1       16    ticket id, random
//	17      8     expiresAtMs, int64 big-endian, Unix milliseconds UTC
//	25      1     seat, 0 or 1, or 2 (protocol.SeatSpectator) for a spectator
//	26      1     n = length of the match id, 1..MaxMatchIDLen
//	27      n     match id, bytes
//	27+n    32    HMAC-SHA256(key, bytes 0 .. 27+n-1)
//
// Any service holding the signing key can mint tickets in this format; the
// edge verifies them without a shared store. Single use is not the ticket's
// business: the match records the ticket id durably (Matches.OpenSeat).
const (
	ticketVersion    = 1
	ticketIDLen      = 16
	ticketHeaderLen  = 1 + ticketIDLen + 8 + 1 + 1
	ticketMACLen     = sha256.Size
	ticketMinBodyLen = ticketHeaderLen + 1 + ticketMACLen
)

// Ticket limits.
const (
	// MinTicketKeyLen is the shortest accepted HMAC key (256 bits).
	MinTicketKeyLen = 32
	// MaxMatchIDLen bounds a match id inside a ticket and in the HTTP API.
	MaxMatchIDLen = 128
	// DefaultTicketTTL is how long a ticket stays valid (docs/protocol.md §2).
	DefaultTicketTTL = 60 * time.Second
	// MaxTicketClockSkew is how far beyond now+TTL a ticket's expiry may
	// lie and still be accepted: the clocks of the edge that issued it and
	// the one that verifies it may disagree by this much. A ticket minted
	// with the key for a longer life (a leaked key, a buggy minting service)
	// is refused instead of living for as long as it says.
	MaxTicketClockSkew = 30 * time.Second
)

// Ticket verification errors. Verify returns exactly one of them, wrapped.
var (
	// ErrTicketInvalid: the ticket is not one this server signed (bad
	// encoding, bad length, bad signature, unknown format version, bad seat).
	// The edge answers ServerError(InvalidTicket) and close 4401.
	ErrTicketInvalid = errors.New("edge: invalid ticket")
	// ErrTicketExpired: a correctly signed ticket past its expiry. The edge
	// answers ServerError(TicketExpired) and close 4401.
	ErrTicketExpired = errors.New("edge: ticket expired")
)

// Claims is what a verified ticket grants.
type Claims struct {
	// ID is the ticket's random 128-bit id as 32 lowercase hex digits.
	ID string
	// MatchID and Seat name the seat the ticket opens.
	MatchID string
	Seat    int
	// ExpiresAt is the end of validity, millisecond precision, UTC.
	ExpiresAt time.Time
}

// Ticket is an issued ticket: the opaque token and what it grants.
type Ticket struct {
	// Token is the opaque string a client puts into ClientHello.ticket.
	// It is a bearer credential: never log it.
	Token string
	Claims
}

// Ticketer issues and verifies tickets. It is safe for concurrent use.
type Ticketer struct {
	keys atomic.Pointer[ticketKeys]
	ttl  time.Duration
}

// ticketKeys is one immutable key set: SetKeys swaps it whole, so a
// verification never sees half of a rotation. The seat-link keys are
// derived from the ticket keys (seatLinkKeyFrom), so they rotate with them:
// a seat key or invite signed with a retired ticket key dies with it.
type ticketKeys struct {
	sign   []byte
	verify [][]byte // sign first
	// seatSign and seatVerify are the seat-link keys of sign and verify.
	seatSign   []byte
	seatVerify [][]byte
}

// NewTicketer returns a Ticketer that signs with key and accepts tickets
// signed with key or any of previousKeys (for key rotation). Every key must
// be at least MinTicketKeyLen bytes; ttl must be positive.
func NewTicketer(key []byte, ttl time.Duration, previousKeys ...[]byte) (*Ticketer, error) {
	if ttl <= 0 {
		return nil, errors.New("ticket-ttl must be positive")
	}
	t := &Ticketer{ttl: ttl}
	if err := t.SetKeys(key, previousKeys...); err != nil {
		return nil, err
	}
	return t, nil
}

// SetKeys replaces the signing key and the other accepted keys at once, for
// keys that rotate while the server runs (matchd shares them through the
// database). The same rules as NewTicketer apply; on error nothing changes.
func (t *Ticketer) SetKeys(key []byte, previousKeys ...[]byte) error {
	if len(key) < MinTicketKeyLen {
		return fmt.Errorf("ticket-key must be at least %d bytes", MinTicketKeyLen)
	}
	ks := &ticketKeys{sign: append([]byte(nil), key...)}
	ks.verify = append(ks.verify, ks.sign)
	for i, k := range previousKeys {
		if len(k) < MinTicketKeyLen {
			return fmt.Errorf("ticket-previous-keys[%d] must be at least %d bytes", i, MinTicketKeyLen)
		}
		ks.verify = append(ks.verify, append([]byte(nil), k...))
	}
	for _, k := range ks.verify {
		ks.seatVerify = append(ks.seatVerify, seatLinkKeyFrom(k))
	}
	ks.seatSign = ks.seatVerify[0]
	t.keys.Store(ks)
	return nil
}

// TTL is how long issued tickets stay valid.
func (t *Ticketer) TTL() time.Duration { return t.ttl }

// Issue mints a ticket for seat of matchID valid for the Ticketer's TTL.
func (t *Ticketer) Issue(matchID string, seat int) (Ticket, error) {
	return t.IssueAt(time.Now(), matchID, seat)
}

// IssueAt mints a ticket as if the time were now; tests use it to mint
// tickets that are already expired.
func (t *Ticketer) IssueAt(now time.Time, matchID string, seat int) (Ticket, error) {
	if err := ValidateMatchID(matchID); err != nil {
		return Ticket{}, err
	}
	if seat < 0 || seat > protocol.SeatSpectator {
		return Ticket{}, fmt.Errorf("edge: seat %d is not 0, 1 or %d (a spectator)", seat, protocol.SeatSpectator)
	}
	var id [ticketIDLen]byte
	if _, err := rand.Read(id[:]); err != nil {
		return Ticket{}, fmt.Errorf("edge: ticket id: %w", err)
	}
	expMs := now.Add(t.ttl).UnixMilli()
	body := make([]byte, 0, ticketHeaderLen+len(matchID)+ticketMACLen)
	body = append(body, ticketVersion)
	body = append(body, id[:]...)
	body = binary.BigEndian.AppendUint64(body, uint64(expMs))
	body = append(body, byte(seat), byte(len(matchID)))
	body = append(body, matchID...)
	body = appendMAC(body, t.keys.Load().sign, body)
	return Ticket{
		Token: base64.RawURLEncoding.EncodeToString(body),
		Claims: Claims{
			ID:        hex.EncodeToString(id[:]),
			MatchID:   matchID,
			Seat:      seat,
			ExpiresAt: time.UnixMilli(expMs).UTC(),
		},
	}, nil
}

// Verify checks a ticket's signature and expiry against the current time.
func (t *Ticketer) Verify(token string) (Claims, error) {
	return t.VerifyAt(time.Now(), token)
}

// VerifyAt checks a ticket as if the time were now. The signature is checked
// first (in constant time), so a forged ticket is ErrTicketInvalid whatever
// its expiry says. A ticket is valid while now < expiresAt and its expiry is
// at most TTL + MaxTicketClockSkew away.
func (t *Ticketer) VerifyAt(now time.Time, token string) (Claims, error) {
	// Bound the work before decoding: a real ticket is well under this.
	maxLen := base64.RawURLEncoding.EncodedLen(ticketHeaderLen + MaxMatchIDLen + ticketMACLen)
	if len(token) > maxLen {
		return Claims{}, fmt.Errorf("%w: %d characters", ErrTicketInvalid, len(token))
	}
	raw, err := base64.RawURLEncoding.Strict().DecodeString(token)
	if err != nil {
		return Claims{}, fmt.Errorf("%w: encoding", ErrTicketInvalid)
	}
	if len(raw) < ticketMinBodyLen {
		return Claims{}, fmt.Errorf("%w: %d bytes", ErrTicketInvalid, len(raw))
	}
	body, mac := raw[:len(raw)-ticketMACLen], raw[len(raw)-ticketMACLen:]
	if !t.macMatches(body, mac) {
		return Claims{}, fmt.Errorf("%w: signature", ErrTicketInvalid)
	}
	// Signed by us: the layout can still be checked for a key shared with a
	// buggy minting service.
	if body[0] != ticketVersion {
		return Claims{}, fmt.Errorf("%w: format version %d", ErrTicketInvalid, body[0])
	}
	seat := int(body[25])
	n := int(body[26])
	if seat > protocol.SeatSpectator || n == 0 || n > MaxMatchIDLen || len(body) != ticketHeaderLen+n {
		return Claims{}, fmt.Errorf("%w: layout", ErrTicketInvalid)
	}
	matchID := string(body[ticketHeaderLen:])
	if err := ValidateMatchID(matchID); err != nil {
		return Claims{}, fmt.Errorf("%w: match id", ErrTicketInvalid)
	}
	expMs := int64(binary.BigEndian.Uint64(body[17:25]))
	c := Claims{
		ID:        hex.EncodeToString(body[1:17]),
		MatchID:   matchID,
		Seat:      seat,
		ExpiresAt: time.UnixMilli(expMs).UTC(),
	}
	if now.UnixMilli() >= expMs {
		return c, fmt.Errorf("%w: expired %d ms ago", ErrTicketExpired, now.UnixMilli()-expMs)
	}
	if limit := now.Add(t.ttl + MaxTicketClockSkew).UnixMilli(); expMs > limit {
		return c, fmt.Errorf("%w: expiry %d ms beyond the ticket lifetime (%v) and clock skew (%v)",
			ErrTicketInvalid, expMs-limit, t.ttl, MaxTicketClockSkew)
	}
	return c, nil
}

func (t *Ticketer) macMatches(body, mac []byte) bool {
	var buf [ticketMACLen]byte
	ok := false
	// Every key is tried, so the time does not say which one matched.
	for _, k := range t.keys.Load().verify {
		want := appendMAC(buf[:0], k, body)
		if hmac.Equal(want, mac) {
			ok = true
		}
	}
	return ok
}

func appendMAC(dst, key, body []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write(body) // hash.Hash.Write never fails
	return m.Sum(dst)
}

// ValidateMatchID checks that id can name a match on the wire and in a
// ticket: 1..MaxMatchIDLen bytes of printable ASCII without spaces.
func ValidateMatchID(id string) error {
	if len(id) == 0 || len(id) > MaxMatchIDLen {
		return fmt.Errorf("edge: match id length %d not in 1..%d", len(id), MaxMatchIDLen)
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; c <= ' ' || c > '~' {
			return fmt.Errorf("edge: match id byte %d is not printable ASCII", i)
		}
	}
	return nil
}

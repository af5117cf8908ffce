package edge

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"time"
)

// Seat keys and invites of the public play flow (play.go). Both are MACs
// under the seat-link key, which is derived from the ticket key (so a ticket
// signature, a seat key and an invite can never be confused) and rotates
// with it: whatever a retired ticket key signed stops opening seats once the
// key is no longer accepted.
//
//	seat key = base64url(nonce[12] || HMAC(link, "seat" ‖ match ‖ seat ‖ nonce)[:18])
//	invite   = base64url(expiresAtMs[8] || HMAC(link, "invite" ‖ match ‖ expiresAtMs)[:18])
//
// The creator's seat key has a random nonce. The friend's has a nonce
// derived from a claim secret the friend's browser draws and sends once, to
// redeem the invite: the creator sees neither the claim nor the key.
const (
	seatNonceLen = 12
	seatMACLen   = 18
	// DefaultInviteTTL is how long a friend invite can be redeemed.
	DefaultInviteTTL = 24 * time.Hour
	// minClaimLen bounds the friend's claim secret from below: 16 random
	// bytes in base64url.
	minClaimLen = 22
	maxClaimLen = 128
)

// Purposes of the seat-link MACs.
const (
	macSeat   = 1
	macInvite = 2
)

// Seat key and invite errors.
var (
	// errBadSeatKey: the key does not open that seat with any accepted key.
	errBadSeatKey = errors.New("edge: seat key does not open that seat")
	// errBadInvite: the invite is not one this cluster signed for the match,
	// or it expired.
	errBadInvite = errors.New("edge: invalid invite")
)

// seatLinkKeyFrom derives the seat-link key from a ticket key.
func seatLinkKeyFrom(ticketKey []byte) []byte {
	m := hmac.New(sha256.New, ticketKey)
	m.Write([]byte("matchgrain seat-link key v1"))
	return m.Sum(nil)
}

func seatMAC(key []byte, purpose byte, matchID string, tail []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte{purpose, byte(len(matchID))})
	m.Write([]byte(matchID))
	m.Write(tail)
	return m.Sum(nil)[:seatMACLen]
}

// claimNonce binds the friend's seat key to its claim secret.
func claimNonce(claim string) []byte {
	sum := sha256.Sum256([]byte("matchgrain seat claim v1\x00" + claim))
	return sum[:seatNonceLen]
}

// seatKey signs the key of seat in matchID with the current seat-link key.
func (t *Ticketer) seatKey(matchID string, seat int, nonce []byte) string {
	tail := append([]byte{byte(seat)}, nonce...)
	out := append(append([]byte(nil), nonce...), seatMAC(t.keys.Load().seatSign, macSeat, matchID, tail)...)
	return base64.RawURLEncoding.EncodeToString(out)
}

// checkSeatKey verifies key for seat of matchID against every accepted
// key, and returns its nonce (to sign it again with the current key).
func (t *Ticketer) checkSeatKey(matchID string, seat int, key string) ([]byte, error) {
	raw, err := base64.RawURLEncoding.Strict().DecodeString(key)
	if err != nil || len(raw) != seatNonceLen+seatMACLen {
		return nil, errBadSeatKey
	}
	nonce, mac := raw[:seatNonceLen], raw[seatNonceLen:]
	tail := append([]byte{byte(seat)}, nonce...)
	ok := false
	for _, k := range t.keys.Load().seatVerify { // every key: the time says nothing
		ok = hmac.Equal(seatMAC(k, macSeat, matchID, tail), mac) || ok
	}
	if !ok {
		return nil, errBadSeatKey
	}
	return nonce, nil
}

// invite signs an invite to seat 1 of matchID valid until expires.
func (t *Ticketer) invite(matchID string, expires time.Time) string {
	exp := binary.BigEndian.AppendUint64(nil, uint64(expires.UnixMilli()))
	out := append(exp, seatMAC(t.keys.Load().seatSign, macInvite, matchID, exp)...)
	return base64.RawURLEncoding.EncodeToString(out)
}

// checkInvite verifies an invite for matchID at now and returns its expiry.
func (t *Ticketer) checkInvite(now time.Time, matchID, invite string) (time.Time, error) {
	raw, err := base64.RawURLEncoding.Strict().DecodeString(invite)
	if err != nil || len(raw) != 8+seatMACLen {
		return time.Time{}, errBadInvite
	}
	exp, mac := raw[:8], raw[8:]
	ok := false
	for _, k := range t.keys.Load().seatVerify {
		ok = hmac.Equal(seatMAC(k, macInvite, matchID, exp), mac) || ok
	}
	if !ok {
		return time.Time{}, errBadInvite
	}
	expires := time.UnixMilli(int64(binary.BigEndian.Uint64(exp))).UTC()
	if !now.Before(expires) {
		return time.Time{}, fmt.Errorf("%w: expired", errBadInvite)
	}
	return expires, nil
}

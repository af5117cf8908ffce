package edge

import (
	"encoding/base64"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/matchgrain/matchgrain/protocol"
)

var (
	keyA = []byte("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa")
	keyB = []byte("bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb")
)

func newTestTicketer(t *testing.T, key []byte, prev ...[]byte) *Ticketer {
	t.Helper()
	tk, err := NewTicketer(key, time.Minute, prev...)
	if err != nil {
		t.Fatalf("NewTicketer: %v", err)
	}
	return tk
}

func TestTicketRoundTrip(t *testing.T) {
	tk := newTestTicketer(t, keyA)
	now := time.UnixMilli(1_700_000_000_123)
	for _, seat := range []int{0, 1, protocol.SeatSpectator} {
		issued, err := tk.IssueAt(now, "match-42", seat)
		if err != nil {
			t.Fatal(err)
		}
		if strings.ContainsAny(issued.Token, "+/=") {
			t.Errorf("token %q is not unpadded base64url", issued.Token)
		}
		got, err := tk.VerifyAt(now.Add(59*time.Second), issued.Token)
		if err != nil {
			t.Fatalf("verify: %v", err)
		}
		if got != issued.Claims {
			t.Errorf("claims %+v, want %+v", got, issued.Claims)
		}
		if len(got.ID) != 32 || got.MatchID != "match-42" || got.Seat != seat || !got.ExpiresAt.Equal(now.Add(time.Minute)) {
			t.Errorf("claims %+v", got)
		}
	}
	a, _ := tk.Issue("m", 0)
	b, _ := tk.Issue("m", 0)
	if a.ID == b.ID || a.Token == b.Token {
		t.Error("two tickets share an id")
	}
}

func TestTicketRejects(t *testing.T) {
	tk := newTestTicketer(t, keyA)
	now := time.Now()
	good, err := tk.IssueAt(now, "match-1", 1)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := base64.RawURLEncoding.DecodeString(good.Token)
	if err != nil {
		t.Fatal(err)
	}
	other := newTestTicketer(t, keyB)
	foreign, _ := other.IssueAt(now, "match-1", 1)
	expired, _ := tk.IssueAt(now.Add(-61*time.Second), "match-1", 1)
	// A forged ticket claiming to be fresh is invalid, not expired.
	forgedExpired, _ := other.IssueAt(now.Add(-time.Hour), "match-1", 1)

	cases := []struct {
		name  string
		token string
		want  error
	}{
		{"empty", "", ErrTicketInvalid},
		{"not base64", "!!!!", ErrTicketInvalid},
		{"padded", good.Token + "=", ErrTicketInvalid},
		{"truncated", good.Token[:len(good.Token)-4], ErrTicketInvalid},
		{"too long", strings.Repeat("A", 4096), ErrTicketInvalid},
		{"short", base64.RawURLEncoding.EncodeToString(raw[:20]), ErrTicketInvalid},
		{"foreign key", foreign.Token, ErrTicketInvalid},
		{"foreign key, expired", forgedExpired.Token, ErrTicketInvalid},
		{"expired", expired.Token, ErrTicketExpired},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tk.VerifyAt(now, tc.token)
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
		})
	}
	// Flipping any single bit anywhere makes the ticket invalid.
	for i := range raw {
		for bit := range 8 {
			mut := append([]byte(nil), raw...)
			mut[i] ^= 1 << bit
			if _, err := tk.VerifyAt(now, base64.RawURLEncoding.EncodeToString(mut)); !errors.Is(err, ErrTicketInvalid) {
				t.Fatalf("byte %d bit %d flipped: err = %v, want invalid", i, bit, err)
			}
		}
	}
}

func TestTicketExpiryBoundary(t *testing.T) {
	tk := newTestTicketer(t, keyA)
	now := time.UnixMilli(1_000_000)
	issued, _ := tk.IssueAt(now, "m", 0)
	if _, err := tk.VerifyAt(now.Add(time.Minute-time.Millisecond), issued.Token); err != nil {
		t.Errorf("1 ms before expiry: %v", err)
	}
	if _, err := tk.VerifyAt(now.Add(time.Minute), issued.Token); !errors.Is(err, ErrTicketExpired) {
		t.Errorf("at expiry: %v, want expired", err)
	}
}

func TestTicketKeyRotation(t *testing.T) {
	oldT := newTestTicketer(t, keyA)
	newT := newTestTicketer(t, keyB, keyA)
	issued, _ := oldT.Issue("m", 0)
	if _, err := newT.Verify(issued.Token); err != nil {
		t.Fatalf("ticket signed with the previous key: %v", err)
	}
	fresh, _ := newT.Issue("m", 0)
	if _, err := oldT.Verify(fresh.Token); !errors.Is(err, ErrTicketInvalid) {
		t.Fatalf("old ticketer accepted a new-key ticket: %v", err)
	}
}

// TestTicketSetKeys: a rotation at run time keeps the tickets in flight
// valid while the old key is still accepted, and refuses them once it is not.
func TestTicketSetKeys(t *testing.T) {
	tk := newTestTicketer(t, keyA)
	old, err := tk.Issue("m", 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := tk.SetKeys(keyB, keyA); err != nil {
		t.Fatal(err)
	}
	fresh, err := tk.Issue("m", 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tk.Verify(old.Token); err != nil {
		t.Errorf("ticket of the previous key during the overlap: %v", err)
	}
	if _, err := newTestTicketer(t, keyB).Verify(fresh.Token); err != nil {
		t.Errorf("new ticket is not signed with the new key: %v", err)
	}
	if err := tk.SetKeys([]byte("short")); err == nil {
		t.Error("short key accepted")
	}
	if err := tk.SetKeys(keyB); err != nil {
		t.Fatal(err)
	}
	if _, err := tk.Verify(old.Token); !errors.Is(err, ErrTicketInvalid) {
		t.Errorf("ticket of a retired key: %v, want ErrTicketInvalid", err)
	}
	if _, err := tk.Verify(fresh.Token); err != nil {
		t.Errorf("ticket of the current key: %v", err)
	}
}

func TestTicketIssueErrors(t *testing.T) {
	tk := newTestTicketer(t, keyA)
	cases := []struct {
		name    string
		matchID string
		seat    int
	}{
		{"seat 3", "m", 3},
		{"seat -1", "m", -1},
		{"empty match", "", 0},
		{"long match", strings.Repeat("m", MaxMatchIDLen+1), 0},
		{"space in match", "a b", 0},
		{"non-ascii match", "mä", 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := tk.Issue(tc.matchID, tc.seat); err == nil {
				t.Fatal("issued")
			}
		})
	}
	if _, err := NewTicketer([]byte("short"), time.Minute); err == nil {
		t.Error("short key accepted")
	}
	if _, err := NewTicketer(keyA, 0); err == nil {
		t.Error("zero ttl accepted")
	}
	if _, err := NewTicketer(keyA, time.Minute, []byte("short")); err == nil {
		t.Error("short previous key accepted")
	}
	long, err := tk.Issue(strings.Repeat("m", MaxMatchIDLen), 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tk.Verify(long.Token); err != nil {
		t.Fatalf("longest match id: %v", err)
	}
}

func BenchmarkTicketIssue(b *testing.B) {
	tk, _ := NewTicketer(keyA, time.Minute)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := tk.Issue("0193a5c2-7d1e-7b3a-9c4f-2e8d1a6b5c40", 1); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkTicketVerify(b *testing.B) {
	tk, _ := NewTicketer(keyA, time.Minute)
	issued, _ := tk.Issue("0193a5c2-7d1e-7b3a-9c4f-2e8d1a6b5c40", 1)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := tk.Verify(issued.Token); err != nil {
			b.Fatal(err)
		}
	}
}

// FuzzTicketVerify: any string is either a valid ticket or exactly one of
// the two sentinel errors; Verify never panics.
func FuzzTicketVerify(f *testing.F) {
	tk, _ := NewTicketer(keyA, time.Minute)
	good, _ := tk.Issue("m-1", 0)
	f.Add(good.Token)
	f.Add("")
	f.Add("AAAA")
	f.Add(good.Token[:10])
	f.Fuzz(func(t *testing.T, token string) {
		c, err := tk.Verify(token)
		switch {
		case err == nil:
			if c.Seat < 0 || c.Seat > 1 || ValidateMatchID(c.MatchID) != nil {
				t.Fatalf("accepted claims %+v", c)
			}
		case errors.Is(err, ErrTicketInvalid) != errors.Is(err, ErrTicketExpired):
		default:
			t.Fatalf("error %v is not exactly one sentinel", err)
		}
	})
}

// TestTicketExpiryCapped is attack 7 of issue 41: a ticket signed with the
// key but minted for a long life (here a day) is refused, while one within
// the TTL and the allowed clock skew is accepted.
func TestTicketExpiryCapped(t *testing.T) {
	key := []byte("0123456789abcdef0123456789abcdef")
	verifier, err := NewTicketer(key, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	minter, err := NewTicketer(key, 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	long, err := minter.IssueAt(now, "m1", 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := verifier.VerifyAt(now, long.Token); !errors.Is(err, ErrTicketInvalid) {
		t.Fatalf("a ticket valid for a day: %v, want ErrTicketInvalid", err)
	}
	skewed, err := verifier.IssueAt(now.Add(MaxTicketClockSkew-time.Second), "m1", 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := verifier.VerifyAt(now, skewed.Token); err != nil {
		t.Fatalf("a ticket from a clock %v ahead: %v", MaxTicketClockSkew-time.Second, err)
	}
}

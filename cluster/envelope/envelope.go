package envelope

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/remote"
	"github.com/vmihailenco/msgpack/v5"
)

// MaxDataBytes is the largest msgpack payload an envelope may carry. Larger
// payloads are refused by Serialize and turned into *Unknown by Deserialize,
// before any decoding allocates.
const MaxDataBytes = 1 << 20

// Sentinel errors. Serialize returns the first two (protoactor then logs and
// drops the message); Unknown.Err wraps one of the last three.
var (
	// ErrUnregistered means the value's Go type was never passed to Register.
	ErrUnregistered = errors.New("envelope: type not registered")
	// ErrTooLarge means the encoded value exceeds MaxDataBytes.
	ErrTooLarge = errors.New("envelope: payload too large")
	// ErrUnknownType means the inbound type name is not registered here.
	ErrUnknownType = errors.New("envelope: unknown type name")
	// ErrDecode means the inbound bytes do not decode into the registered type.
	ErrDecode = errors.New("envelope: undecodable payload")
)

var (
	_ remote.RootSerializable = (*Msg)(nil)
	_ remote.RootSerialized   = (*Envelope)(nil)
)

// Msg is the in-process form of an enveloped value. Send *Msg (see Wrap) to
// any PID; receivers always get a *Msg whose V is a pointer of a registered
// type, or an *Unknown.
type Msg struct {
	// Type is the registered name of V. Wrap and Deserialize fill it in;
	// Serialize ignores it and derives the name from V's Go type, so a
	// hand-built Msg cannot lie about its payload.
	Type string
	// V is the payload. It is shared with the receiver on local delivery.
	V any
	// Deadline is when the sender of a request stops waiting for its
	// answer, in Unix nanoseconds by the sender's clock; 0 means none
	// (a reply, a push, a request within one member, or a member older
	// than the field). It crosses the wire as Envelope.deadline. See
	// Expired.
	Deadline int64
}

// Unknown is the payload of a Msg that could not be decoded: its type name is
// not registered in this process, or its bytes are too large or malformed.
// Receivers should ignore it; Deserialize has already logged it (rate
// limited) at WARN.
type Unknown struct {
	// Type is the type name the sender put on the wire.
	Type string
	// Err says why decoding failed; it wraps ErrUnknownType, ErrTooLarge or ErrDecode.
	Err error
}

type registry struct {
	mu     sync.RWMutex
	byName map[string]func() any
	byType map[reflect.Type]string
}

var reg = registry{
	byName: map[string]func() any{},
	byType: map[reflect.Type]string{},
}

// Register binds name to the Go type that newFn returns, for every envelope
// sent or received by this process. newFn must return a fresh non-nil pointer
// on each call. Call it from init: registering an empty name, a non-pointer,
// or a name or type twice is a programming error and panics.
func Register(name string, newFn func() any) {
	if name == "" || newFn == nil {
		panic("envelope: Register needs a name and a constructor")
	}
	v := newFn()
	t := reflect.TypeOf(v)
	if t == nil || t.Kind() != reflect.Pointer || reflect.ValueOf(v).IsNil() {
		panic(fmt.Sprintf("envelope: Register(%q): constructor must return a non-nil pointer, got %T", name, v))
	}
	reg.mu.Lock()
	defer reg.mu.Unlock()
	if _, dup := reg.byName[name]; dup {
		panic(fmt.Sprintf("envelope: Register(%q): name registered twice", name))
	}
	if other, dup := reg.byType[t]; dup {
		panic(fmt.Sprintf("envelope: Register(%q): type %v already registered as %q", name, t, other))
	}
	reg.byName[name] = newFn
	reg.byType[t] = name
}

// NameOf returns the registered name of v's Go type.
func NameOf(v any) (string, bool) {
	reg.mu.RLock()
	defer reg.mu.RUnlock()
	name, ok := reg.byType[reflect.TypeOf(v)]
	return name, ok
}

// Wrap puts v in a Msg. If v's type is not registered, Type stays empty and
// sending the Msg to a remote PID fails (protoactor logs and drops it); use
// NameOf to refuse such values earlier.
func Wrap(v any) *Msg {
	name, _ := NameOf(v)
	return &Msg{Type: name, V: v}
}

// Serialize implements remote.RootSerializable: it encodes V with msgpack
// into an *Envelope. It is called by protoactor's endpoint writer only when the
// target is remote.
func (m *Msg) Serialize() (remote.RootSerialized, error) {
	name, ok := NameOf(m.V)
	if !ok {
		return nil, fmt.Errorf("%w: %T", ErrUnregistered, m.V)
	}
	data, err := marshal(m.V)
	if err != nil {
		return nil, fmt.Errorf("envelope: encode %q: %w", name, err)
	}
	if len(data) > MaxDataBytes {
		return nil, fmt.Errorf("%w: %q is %d bytes, limit %d", ErrTooLarge, name, len(data), MaxDataBytes)
	}
	return &Envelope{Type: name, Data: data, Deadline: m.Deadline}, nil
}

// encoder is a msgpack encoder with the buffer it writes to, kept for
// reuse in encoders.
type encoder struct {
	buf bytes.Buffer
	enc *msgpack.Encoder
}

// encoders spare each Serialize the growth of a fresh buffer: msgpack.Marshal
// starts from an empty one and doubles it up to the payload's size, about
// three times the payload in garbage, and every request, reply and push to
// another member is serialized once (the largest allocator of a member whose
// sessions' grains live elsewhere, docs/performance.md §3.5).
var encoders = sync.Pool{New: func() any {
	e := &encoder{}
	e.enc = msgpack.NewEncoder(&e.buf)
	return e
}}

// maxPooledBuffer bounds the buffers kept in encoders: a rare large payload
// does not pin its buffer.
const maxPooledBuffer = 64 << 10

// marshal is msgpack.Marshal into a pooled buffer; the result is a copy of
// exactly the payload's length, owned by the caller.
func marshal(v any) ([]byte, error) {
	e := encoders.Get().(*encoder)
	e.buf.Reset()
	err := e.enc.Encode(v)
	var data []byte
	if err == nil {
		data = bytes.Clone(e.buf.Bytes())
	}
	if e.buf.Cap() <= maxPooledBuffer {
		encoders.Put(e)
	}
	return data, err
}

// Deserialize implements remote.RootSerialized. It never returns an error,
// because protoactor closes the sender's whole inbound stream on one: a
// payload that cannot be decoded becomes a Msg holding an *Unknown.
func (e *Envelope) Deserialize() (remote.RootSerializable, error) {
	m := Decode(e.GetType(), e.GetData())
	m.Deadline = e.GetDeadline()
	return m, nil
}

// Expired reports whether the sender of m had stopped waiting for it by
// now, by more than skew: the most this member's clock may run ahead of
// the sender's. A receiver should then drop m, answering nothing and
// changing nothing (in particular activating nothing): its sender gave up
// on it and may have sent it again elsewhere. A message without a
// deadline never expires, so members that send none (older releases) are
// served as before.
//
// Deadlines compare wall clocks of two members. A receiver whose clock
// runs ahead of the sender's by more than skew drops requests that still
// had that excess left, so it shortens every request by the excess
// rather than refusing them all; one that runs behind serves late
// requests for as long as it lags, as if they carried no deadline.
func (m *Msg) Expired(now time.Time, skew time.Duration) bool {
	return m.Deadline != 0 && now.UnixNano()-int64(skew) > m.Deadline
}

// Decode turns a type name and msgpack bytes into a Msg, exactly as an
// inbound envelope is decoded. It never fails: see Unknown.
func Decode(typeName string, data []byte) *Msg {
	if len(data) > MaxDataBytes {
		return unknown(typeName, fmt.Errorf("%w: %d bytes, limit %d", ErrTooLarge, len(data), MaxDataBytes))
	}
	reg.mu.RLock()
	newFn, ok := reg.byName[typeName]
	reg.mu.RUnlock()
	if !ok {
		return unknown(typeName, ErrUnknownType)
	}
	v := newFn()
	if err := msgpack.Unmarshal(data, v); err != nil {
		return unknown(typeName, fmt.Errorf("%w: %w", ErrDecode, err))
	}
	return &Msg{Type: typeName, V: v}
}

func unknown(typeName string, err error) *Msg {
	warnUnknown(typeName, err)
	return &Msg{Type: typeName, V: &Unknown{Type: typeName, Err: err}}
}

// warnEvery bounds how often undecodable envelopes are logged: a peer running
// a newer binary may send thousands, and each would otherwise log a line.
const warnEvery = 10 * time.Second

var (
	logger atomic.Pointer[slog.Logger]
	warnMu sync.Mutex
	// lastWarn and suppressed are guarded by warnMu.
	lastWarn   time.Time
	suppressed int
)

// SetLogger sets where undecodable envelopes are reported (default
// slog.Default()). Safe to call at any time.
func SetLogger(l *slog.Logger) {
	logger.Store(l)
}

func warnUnknown(typeName string, err error) {
	warnMu.Lock()
	now := time.Now()
	if !lastWarn.IsZero() && now.Sub(lastWarn) < warnEvery {
		suppressed++
		warnMu.Unlock()
		return
	}
	n := suppressed
	suppressed = 0
	lastWarn = now
	warnMu.Unlock()

	l := logger.Load()
	if l == nil {
		l = slog.Default()
	}
	const maxName = 64 // the name comes from a peer: keep log lines bounded
	if len(typeName) > maxName {
		typeName = typeName[:maxName] + "..."
	}
	l.Warn("envelope: ignoring undecodable message",
		slog.String("type", typeName), slog.Any("error", err), slog.Int("suppressed_since_last", n))
}

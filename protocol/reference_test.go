package protocol

import (
	"bytes"
	"fmt"
	"reflect"
	"testing"

	"github.com/vmihailenco/msgpack/v5"
)

// A dumb reference encoder driven by reflection over the Go types: a struct is
// an array of its fields in declaration order, an interface is a [key, body]
// union, a nil pointer is nil, a slice or fixed array is an array. The
// hand-written encoder must produce the same bytes for every value, so a field
// added to or reordered in the types (field order == wire key order) without
// updating the codec fails this test instead of shipping.

func refEncode(t *testing.T, v any) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := msgpack.NewEncoder(&buf)
	if err := refUnion(enc, reflect.ValueOf(v)); err != nil {
		t.Fatalf("reference encoder: %v", err)
	}
	return buf.Bytes()
}

func refUnion(enc *msgpack.Encoder, v reflect.Value) error {
	key, _, unknown := unionInfo(v.Interface())
	if err := enc.EncodeArrayLen(2); err != nil {
		return err
	}
	if err := enc.EncodeInt(int64(key)); err != nil {
		return err
	}
	if unknown {
		return enc.EncodeArrayLen(0)
	}
	return refValue(enc, v)
}

func refValue(enc *msgpack.Encoder, v reflect.Value) error {
	switch v.Kind() {
	case reflect.Interface:
		if v.IsNil() {
			return fmt.Errorf("nil union in %s", v.Type())
		}
		return refUnion(enc, v.Elem())
	case reflect.Pointer:
		if v.IsNil() {
			return enc.EncodeNil()
		}
		return refValue(enc, v.Elem())
	case reflect.Struct:
		if err := enc.EncodeArrayLen(v.NumField()); err != nil {
			return err
		}
		for i := 0; i < v.NumField(); i++ {
			if err := refValue(enc, v.Field(i)); err != nil {
				return err
			}
		}
		return nil
	case reflect.Slice, reflect.Array:
		if err := enc.EncodeArrayLen(v.Len()); err != nil {
			return err
		}
		for i := 0; i < v.Len(); i++ {
			if err := refValue(enc, v.Index(i)); err != nil {
				return err
			}
		}
		return nil
	case reflect.Int, reflect.Int64:
		return enc.EncodeInt(v.Int())
	case reflect.String:
		return enc.EncodeString(v.String())
	case reflect.Bool:
		return enc.EncodeBool(v.Bool())
	}
	return fmt.Errorf("unsupported kind %s", v.Kind())
}

// fill sets every field of v (recursively) to a distinct non-zero value:
// slices get two elements, pointers are allocated, unions get a member that
// itself has optional fields. A codec that drops or swaps a field then fails
// the round trip.
func fill(v reflect.Value, n *int) {
	switch v.Kind() {
	case reflect.Int, reflect.Int64:
		*n++
		if *n%3 == 0 {
			v.SetInt(int64(-*n))
		} else {
			v.SetInt(int64(*n * 997))
		}
	case reflect.String:
		*n++
		v.SetString(fmt.Sprintf("s%d", *n))
	case reflect.Bool:
		*n++
		v.SetBool(true)
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		fill(p.Elem(), n)
		v.Set(p)
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			fill(v.Field(i), n)
		}
	case reflect.Array:
		for i := 0; i < v.Len(); i++ {
			fill(v.Index(i), n)
		}
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 2, 2)
		for i := 0; i < 2; i++ {
			fill(s.Index(i), n)
		}
		v.Set(s)
	case reflect.Interface:
		*n++
		switch v.Type() {
		case intentType:
			v.Set(reflect.ValueOf(Attack{AttackerSlot: *n, TargetSlot: -*n, BoosterSlot: IntPtr(*n + 1)}))
		case eventType:
			v.Set(reflect.ValueOf(&MoveEvent{Player: 1, Card: card(*n, "x"), FromSlot: 3, ToSlot: 0, Swapped: &CardRef{InstanceID: *n + 1}}))
		default:
			panic("fill: unexpected interface " + v.Type().String())
		}
	default:
		panic("fill: unexpected kind " + v.Kind().String())
	}
}

// filled returns a new value of the same type as sample with every field set.
func filled[T any](sample T) T {
	t := reflect.TypeOf(sample)
	n := 0
	if t.Kind() == reflect.Pointer {
		p := reflect.New(t.Elem())
		fill(p.Elem(), &n)
		return p.Interface().(T)
	}
	p := reflect.New(t)
	fill(p.Elem(), &n)
	return p.Elem().Interface().(T)
}

// allFrames returns the samples and a filled variant of every client and
// server frame, with every intent and event inside a frame.
func allClientFrames() []ClientFrame {
	out := sampleClientFrames()
	for _, f := range sampleClientFrames() {
		out = append(out, filled(f))
	}
	for _, it := range sampleIntents() {
		out = append(out,
			&ClientIntent{IntentID: "id-" + it.IntentKind().String(), BasedOnSeq: 1, Intent: it},
			&ClientIntent{IntentID: "filled", BasedOnSeq: -1, Intent: filled(it)})
	}
	return out
}

func allServerFrames() []ServerFrame {
	out := sampleServerFrames()
	for _, f := range sampleServerFrames() {
		out = append(out, filled(f))
	}
	full := snapshotView(true)
	out = append(out, &ServerSnapshot{View: full}, &ServerSnapshot{View: MatchView{}})
	var envs []EventEnvelope
	for i, ev := range sampleEvents() {
		envs = append(envs, EventEnvelope{Seq: int64(i + 1), Event: ev}, EventEnvelope{Seq: int64(100 + i), Event: filled(ev)})
	}
	out = append(out, &ServerEvents{FromSeq: 1, ToSeq: 200, Events: envs}, &ServerEvents{FromSeq: 5, ToSeq: 4})
	legal := &ServerSnapshot{View: snapshotView(false)}
	for _, it := range sampleIntents() {
		legal.View.LegalIntents = append(legal.View.LegalIntents, it, filled(it))
	}
	return append(out, legal)
}

func TestEncoderMatchesReference(t *testing.T) {
	for i, f := range allClientFrames() {
		got, err := EncodeClientFrame(f)
		if err != nil {
			t.Fatalf("client frame %d (%T): %v", i, f, err)
		}
		if want := refEncode(t, f); !bytes.Equal(got, want) {
			t.Errorf("client frame %d (%T):\n got %x\nwant %x", i, f, got, want)
		}
	}
	for i, f := range allServerFrames() {
		got, err := EncodeServerFrame(f)
		if err != nil {
			t.Fatalf("server frame %d (%T): %v", i, f, err)
		}
		if want := refEncode(t, f); !bytes.Equal(got, want) {
			t.Errorf("server frame %d (%T):\n got %x\nwant %x", i, f, got, want)
		}
	}
}

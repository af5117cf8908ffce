package protocol

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// The JSON rendering used by testdata/vectors.json (documented in
// docs/protocol.md): a union value is {"key": k, "type": "Name", "body": {...}},
// a DTO is an object whose members are its fields in key order under their
// wire names, an absent optional is null, a slice (nil or not) and a fixed
// array are arrays, enums are their integers.

// MarshalJSONValue renders a frame, intent, event or DTO as vector JSON.
func MarshalJSONValue(v any) ([]byte, error) {
	var buf bytes.Buffer
	rv := reflect.ValueOf(v)
	var err error
	if isUnion(rv) {
		err = renderUnion(&buf, rv)
	} else {
		err = renderValue(&buf, rv)
	}
	if err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// wireName is the spec's camelCase name of a Go field: InstanceID → instanceId.
func wireName(goName string) string {
	s := strings.TrimSuffix(goName, "ID")
	if s != goName {
		s += "Id"
	}
	r := []rune(s)
	r[0] = unicode.ToLower(r[0])
	return string(r)
}

var (
	clientFrameType = reflect.TypeFor[ClientFrame]()
	serverFrameType = reflect.TypeFor[ServerFrame]()
	intentType      = reflect.TypeFor[Intent]()
	eventType       = reflect.TypeFor[Event]()
)

func isUnion(v reflect.Value) bool {
	if !v.IsValid() {
		return false
	}
	t := v.Type()
	return t.Implements(clientFrameType) || t.Implements(serverFrameType) || t.Implements(intentType) || t.Implements(eventType)
}

// unionInfo returns the key and spec name of a union member.
func unionInfo(x any) (key int, name string, unknown bool) {
	switch v := x.(type) {
	case ClientFrame:
		return int(v.ClientFrameKind()), v.ClientFrameKind().String(), false
	case ServerFrame:
		return int(v.ServerFrameKind()), v.ServerFrameKind().String(), false
	case *UnknownEvent:
		return int(v.Key), "Unknown", true
	case UnknownIntent:
		return int(v.Key), "Unknown", true
	case *UnknownIntent:
		return int(v.Key), "Unknown", true
	case Event:
		return int(v.EventKind()), v.EventKind().String(), false
	case Intent:
		return int(v.IntentKind()), v.IntentKind().String(), false
	}
	panic(fmt.Sprintf("not a union member: %T", x))
}

func renderUnion(buf *bytes.Buffer, v reflect.Value) error {
	if v.Kind() == reflect.Pointer && v.IsNil() {
		buf.WriteString("null")
		return nil
	}
	key, name, unknown := unionInfo(v.Interface())
	fmt.Fprintf(buf, `{"key":%d,"type":%q,"body":`, key, name)
	if unknown {
		buf.WriteString("null")
	} else if err := renderValue(buf, v); err != nil {
		return err
	}
	buf.WriteByte('}')
	return nil
}

func renderValue(buf *bytes.Buffer, v reflect.Value) error {
	switch v.Kind() {
	case reflect.Interface:
		if v.IsNil() {
			buf.WriteString("null")
			return nil
		}
		return renderUnion(buf, v.Elem())
	case reflect.Pointer:
		if v.IsNil() {
			buf.WriteString("null")
			return nil
		}
		return renderValue(buf, v.Elem())
	case reflect.Struct:
		buf.WriteByte('{')
		for i := 0; i < v.NumField(); i++ {
			if i > 0 {
				buf.WriteByte(',')
			}
			fmt.Fprintf(buf, "%q:", wireName(v.Type().Field(i).Name))
			if err := renderValue(buf, v.Field(i)); err != nil {
				return err
			}
		}
		buf.WriteByte('}')
	case reflect.Slice, reflect.Array:
		buf.WriteByte('[')
		for i := 0; i < v.Len(); i++ {
			if i > 0 {
				buf.WriteByte(',')
			}
			if err := renderValue(buf, v.Index(i)); err != nil {
				return err
			}
		}
		buf.WriteByte(']')
	case reflect.Int, reflect.Int64:
		buf.WriteString(strconv.FormatInt(v.Int(), 10))
	case reflect.String:
		b, err := json.Marshal(v.String())
		if err != nil {
			return fmt.Errorf("render string: %w", err)
		}
		buf.Write(b)
	case reflect.Bool:
		buf.WriteString(strconv.FormatBool(v.Bool()))
	default:
		return fmt.Errorf("render: unsupported kind %s (%s)", v.Kind(), v.Type())
	}
	return nil
}

// jsonEqual compares two JSON documents by value (numbers exactly).
func jsonEqual(t *testing.T, a, b []byte) bool {
	t.Helper()
	return reflect.DeepEqual(parseJSON(t, a), parseJSON(t, b))
}

func parseJSON(t *testing.T, b []byte) any {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		t.Fatalf("parse JSON %s: %v", b, err)
	}
	return v
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := MarshalJSONValue(v)
	if err != nil {
		t.Fatalf("MarshalJSONValue(%T): %v", v, err)
	}
	return b
}

func TestWireName(t *testing.T) {
	for in, want := range map[string]string{
		"InstanceID": "instanceId", "DiscardPrintingID": "discardPrintingId", "MatchID": "matchId",
		"Bank0Ms": "bank0Ms", "You": "you", "IsFinished": "isFinished", "TurnDeadlineMs": "turnDeadlineMs",
	} {
		if got := wireName(in); got != want {
			t.Errorf("wireName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestMarshalJSONValue(t *testing.T) {
	got := mustJSON(t, &ClientIntent{IntentID: "a", BasedOnSeq: 3, Intent: Attack{AttackerSlot: -1, TargetSlot: 3}})
	want := `{"key":1,"type":"ClientIntent","body":{"intentId":"a","basedOnSeq":3,"intent":{"key":7,"type":"Attack","body":{"attackerSlot":-1,"targetSlot":3,"boosterSlot":null}}}}`
	if string(got) != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	got = mustJSON(t, &CardsDrawnEvent{Player: 1, Count: 2})
	want = `{"key":3,"type":"CardsDrawn","body":{"player":1,"count":2,"cards":[]}}`
	if string(got) != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

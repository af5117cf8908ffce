package protocol

import (
	"encoding/binary"
	"fmt"
	"math"
	"unicode/utf8"

	"github.com/vmihailenco/msgpack/v5/msgpcode"
)

// reader is a bounded MessagePack cursor over one frame. It exists because
// msgpack/v5 (v5.4.1) allocates whatever length a str/bin/array header claims
// before reading it. Here every header is checked against the bytes left and
// against its limit first, nesting is counted against MaxDepth, and only fixed
// schemas are decoded: there is no interface{} decoding anywhere.
//
// Errors are sticky: the first one is kept in err and every later call is a
// no-op that returns a zero value, so the per-type code reads as a field list
// and checks r.err once.
type reader struct {
	b     []byte
	off   int
	depth int
	// client applies the client-frame rules: string limits and UTF-8.
	client bool
	err    error
	// unknownIntent is set when a client intent key was unknown; the frame
	// still decodes to the end so that trailing garbage stays fatal.
	unknownIntent    bool
	unknownIntentKey int64
}

// fail records a malformed-input error at the current offset.
func (r *reader) fail(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: offset %d: %s", ErrMalformed, r.off, fmt.Sprintf(format, args...))
	}
}

func (r *reader) left() int { return len(r.b) - r.off }

// need fails unless n more bytes are available.
func (r *reader) need(n int, what string) bool {
	if r.err != nil {
		return false
	}
	if n > r.left() {
		r.fail("%s needs %d bytes, %d left", what, n, r.left())
		return false
	}
	return true
}

// code returns the next type byte without consuming it.
func (r *reader) code(what string) (byte, bool) {
	if !r.need(1, what) {
		return 0, false
	}
	return r.b[r.off], true
}

// uintN reads an n-byte big-endian unsigned integer after the type byte.
func (r *reader) uintN(n int, what string) (uint64, bool) {
	if !r.need(1+n, what) {
		return 0, false
	}
	p := r.b[r.off+1 : r.off+1+n]
	r.off += 1 + n
	switch n {
	case 1:
		return uint64(p[0]), true
	case 2:
		return uint64(binary.BigEndian.Uint16(p)), true
	case 4:
		return uint64(binary.BigEndian.Uint32(p)), true
	default:
		return binary.BigEndian.Uint64(p), true
	}
}

// describe names a type byte for error messages.
func describe(c byte) string {
	switch {
	case c <= msgpcode.PosFixedNumHigh || c >= msgpcode.NegFixedNumLow:
		return "integer"
	case msgpcode.IsFixedMap(c) || c == msgpcode.Map16 || c == msgpcode.Map32:
		return "map"
	case msgpcode.IsFixedArray(c) || c == msgpcode.Array16 || c == msgpcode.Array32:
		return "array"
	case msgpcode.IsString(c):
		return "string"
	case msgpcode.IsBin(c):
		return "bin"
	case msgpcode.IsExt(c):
		return "ext"
	}
	switch c {
	case msgpcode.Nil:
		return "nil"
	case msgpcode.False, msgpcode.True:
		return "bool"
	case msgpcode.Float, msgpcode.Double:
		return "float"
	case msgpcode.Uint8, msgpcode.Uint16, msgpcode.Uint32, msgpcode.Uint64,
		msgpcode.Int8, msgpcode.Int16, msgpcode.Int32, msgpcode.Int64:
		return "integer"
	}
	return fmt.Sprintf("invalid code 0x%02x", c)
}

// i64 reads an integer of any MessagePack width that fits in int64.
func (r *reader) i64(field string) int64 {
	c, ok := r.code(field)
	if !ok {
		return 0
	}
	if c <= msgpcode.PosFixedNumHigh {
		r.off++
		return int64(c)
	}
	if c >= msgpcode.NegFixedNumLow {
		r.off++
		return int64(int8(c))
	}
	var u uint64
	switch c {
	case msgpcode.Uint8:
		u, ok = r.uintN(1, field)
	case msgpcode.Uint16:
		u, ok = r.uintN(2, field)
	case msgpcode.Uint32:
		u, ok = r.uintN(4, field)
	case msgpcode.Uint64:
		u, ok = r.uintN(8, field)
		if ok && u > math.MaxInt64 {
			r.off -= 9
			r.fail("%s: %d does not fit int64", field, u)
			return 0
		}
	case msgpcode.Int8:
		u, ok = r.uintN(1, field)
		return int64(int8(u))
	case msgpcode.Int16:
		u, ok = r.uintN(2, field)
		return int64(int16(u))
	case msgpcode.Int32:
		u, ok = r.uintN(4, field)
		return int64(int32(u))
	case msgpcode.Int64:
		u, ok = r.uintN(8, field)
		return int64(u)
	default:
		r.fail("%s: want integer, got %s", field, describe(c))
		return 0
	}
	if !ok {
		return 0
	}
	return int64(u)
}

// int reads an integer that must fit the Go int of this platform.
func (r *reader) int(field string) int {
	start := r.off
	v := r.i64(field)
	if v < math.MinInt || v > math.MaxInt {
		r.off = start
		r.fail("%s: %d does not fit int", field, v)
		return 0
	}
	return int(v)
}

func (r *reader) bool(field string) bool {
	c, ok := r.code(field)
	if !ok {
		return false
	}
	switch c {
	case msgpcode.True:
		r.off++
		return true
	case msgpcode.False:
		r.off++
		return false
	}
	r.fail("%s: want bool, got %s", field, describe(c))
	return false
}

// isNil consumes a nil and reports whether there was one; an optional field
// calls it before reading its value.
func (r *reader) isNil() bool {
	if r.err == nil && r.off < len(r.b) && r.b[r.off] == msgpcode.Nil {
		r.off++
		return true
	}
	return false
}

// str reads a string. In a client frame its length must be within min..max
// (checked before anything is copied) and it must be valid UTF-8; in a server
// frame only the bytes left bound it.
func (r *reader) str(field string, min, max int) string {
	c, ok := r.code(field)
	if !ok {
		return ""
	}
	var n uint64
	switch {
	case msgpcode.IsFixedString(c):
		n = uint64(c & msgpcode.FixedStrMask)
		r.off++
	case c == msgpcode.Str8:
		n, ok = r.uintN(1, field)
	case c == msgpcode.Str16:
		n, ok = r.uintN(2, field)
	case c == msgpcode.Str32:
		n, ok = r.uintN(4, field)
	default:
		r.fail("%s: want string, got %s", field, describe(c))
		return ""
	}
	if !ok {
		return ""
	}
	if r.client && (n < uint64(min) || n > uint64(max)) {
		r.err = fmt.Errorf("%w: %w: offset %d: %s is %d bytes, want %d..%d",
			ErrMalformed, ErrStringLimit, r.off, field, n, min, max)
		return ""
	}
	if n > uint64(r.left()) {
		r.fail("%s: string of %d bytes, %d left", field, n, r.left())
		return ""
	}
	p := r.b[r.off : r.off+int(n)]
	if r.client && !utf8.Valid(p) {
		r.fail("%s: invalid UTF-8", field)
		return ""
	}
	r.off += int(n)
	return string(p)
}

// arrayHeader reads an array header and checks its length against max and the
// bytes left (every element takes at least one byte), before any caller
// allocates for it. It does not change the depth.
func (r *reader) arrayHeader(field string, max int) int {
	c, ok := r.code(field)
	if !ok {
		return 0
	}
	var n uint64
	switch {
	case msgpcode.IsFixedArray(c):
		n = uint64(c & msgpcode.FixedArrayMask)
		r.off++
	case c == msgpcode.Array16:
		n, ok = r.uintN(2, field)
	case c == msgpcode.Array32:
		n, ok = r.uintN(4, field)
	default:
		r.fail("%s: want array, got %s", field, describe(c))
		return 0
	}
	if !ok {
		return 0
	}
	if n > uint64(max) {
		r.fail("%s: array of %d elements, limit %d", field, n, max)
		return 0
	}
	if n > uint64(r.left()) {
		r.fail("%s: array of %d elements, %d bytes left", field, n, r.left())
		return 0
	}
	return int(n)
}

// enter counts one level of nesting.
func (r *reader) enter(field string) bool {
	if r.err != nil {
		return false
	}
	r.depth++
	if r.depth > MaxDepth {
		r.fail("%s: nesting deeper than %d", field, MaxDepth)
		return false
	}
	return true
}

// open reads the header of a body or list (at most MaxArrayLen elements) and
// enters it. The caller reads min(n, its fields) elements and calls close.
func (r *reader) open(field string) int {
	return r.openMax(field, MaxArrayLen)
}

func (r *reader) openMax(field string, max int) int {
	n := r.arrayHeader(field, max)
	if !r.enter(field) {
		return 0
	}
	return n
}

// close skips the elements of an array past the used ones (newer fields this
// version does not know) and leaves the array.
func (r *reader) close(n, used int) {
	for i := used; i < n && r.err == nil; i++ {
		r.skip()
	}
	r.depth--
}

// fixed opens an array that must have exactly n elements ([2]int, [5]*CardView).
func (r *reader) fixed(field string, n int) bool {
	got := r.open(field)
	if r.err == nil && got != n {
		r.fail("%s: want %d elements, got %d", field, n, got)
	}
	return r.err == nil
}

// unionKey opens a [key, body] pair and returns the key; the caller decodes
// the body and calls close(2, 2).
func (r *reader) unionKey(field string) int64 {
	n := r.open(field)
	if r.err == nil && n != 2 {
		r.fail("%s: union must be [key, body], got %d elements", field, n)
		return 0
	}
	// The union key is reported under the union's name: a concatenated
	// field name would allocate on every call.
	return r.i64(field)
}

// skip consumes one value of any type within the same limits, for extra
// trailing fields and unknown union bodies. Its recursion is bounded by
// MaxDepth and its work by the bytes left.
func (r *reader) skip() {
	c, ok := r.code("skipped value")
	if !ok {
		return
	}
	switch {
	case c <= msgpcode.PosFixedNumHigh || c >= msgpcode.NegFixedNumLow,
		c == msgpcode.Nil, c == msgpcode.False, c == msgpcode.True:
		r.off++
		return
	case msgpcode.IsFixedString(c):
		r.skipBytes(1, int(c&msgpcode.FixedStrMask))
		return
	case msgpcode.IsFixedArray(c) || c == msgpcode.Array16 || c == msgpcode.Array32:
		n := r.open("skipped array")
		r.close(n, 0)
		return
	case msgpcode.IsFixedMap(c) || c == msgpcode.Map16 || c == msgpcode.Map32:
		r.skipMap(c)
		return
	}
	switch c {
	case msgpcode.Uint8, msgpcode.Int8:
		r.skipBytes(1, 1)
	case msgpcode.Uint16, msgpcode.Int16:
		r.skipBytes(1, 2)
	case msgpcode.Uint32, msgpcode.Int32, msgpcode.Float:
		r.skipBytes(1, 4)
	case msgpcode.Uint64, msgpcode.Int64, msgpcode.Double:
		r.skipBytes(1, 8)
	case msgpcode.FixExt1:
		r.skipBytes(2, 1)
	case msgpcode.FixExt2:
		r.skipBytes(2, 2)
	case msgpcode.FixExt4:
		r.skipBytes(2, 4)
	case msgpcode.FixExt8:
		r.skipBytes(2, 8)
	case msgpcode.FixExt16:
		r.skipBytes(2, 16)
	case msgpcode.Str8, msgpcode.Bin8:
		r.skipSized(1, 0)
	case msgpcode.Str16, msgpcode.Bin16:
		r.skipSized(2, 0)
	case msgpcode.Str32, msgpcode.Bin32:
		r.skipSized(4, 0)
	case msgpcode.Ext8:
		r.skipSized(1, 1)
	case msgpcode.Ext16:
		r.skipSized(2, 1)
	case msgpcode.Ext32:
		r.skipSized(4, 1)
	default:
		r.fail("skipped value: %s", describe(c))
	}
}

// skipBytes consumes a header of h bytes and a payload of n bytes.
func (r *reader) skipBytes(h, n int) {
	if r.need(h+n, "skipped value") {
		r.off += h + n
	}
}

// skipSized consumes a value whose payload length is an lenBytes-wide field
// after the type byte, followed by extra bytes (the ext type) and the payload.
func (r *reader) skipSized(lenBytes, extra int) {
	n, ok := r.uintN(lenBytes, "skipped value")
	if !ok {
		return
	}
	if n+uint64(extra) > uint64(r.left()) {
		r.fail("skipped value of %d bytes, %d left", n, r.left())
		return
	}
	r.off += extra + int(n)
}

// skipMap skips a map; maps never appear in the schema, only in skipped data.
func (r *reader) skipMap(c byte) {
	var n uint64
	ok := true
	switch {
	case msgpcode.IsFixedMap(c):
		n = uint64(c & msgpcode.FixedMapMask)
		r.off++
	case c == msgpcode.Map16:
		n, ok = r.uintN(2, "skipped map")
	default:
		n, ok = r.uintN(4, "skipped map")
	}
	if !ok {
		return
	}
	if n > MaxArrayLen || 2*n > uint64(r.left()) {
		r.fail("skipped map of %d entries, limit %d, %d bytes left", n, MaxArrayLen, r.left())
		return
	}
	if !r.enter("skipped map") {
		return
	}
	for i := uint64(0); i < 2*n && r.err == nil; i++ {
		r.skip()
	}
	r.depth--
}

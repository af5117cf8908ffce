package persistence

import (
	"bytes"
	"testing"

	"github.com/jackc/pgx/v5/pgtype"
)

// TestPgParamsMatchPgx: every parameter the append path encodes by hand is
// byte for byte what pgx itself would send for the same value and type.
func TestPgParamsMatchPgx(t *testing.T) {
	m := pgtype.NewMap()
	ids := []string{"m-1", "", "ünïcode-\u00e9", "x"}
	nums := []int64{0, 1, -1, 1 << 40, -1 << 62}
	payloads := [][]byte{{}, nil, []byte("payload"), bytes.Repeat([]byte{0xff, 0}, 300)}

	p := getParams()
	p.text(ids[2])
	p.int8(nums[4])
	p.bytea(payloads[2])
	p.bytea(nil)
	p.beginArray(pgtype.TextOID, len(ids))
	for _, s := range ids {
		p.elemText(s)
	}
	p.endArray()
	p.beginArray(pgtype.Int8OID, len(nums))
	for _, v := range nums {
		p.elemInt8(v)
	}
	p.endArray()
	p.beginArray(pgtype.ByteaOID, len(payloads))
	for _, b := range payloads {
		p.elemBytea(b)
	}
	p.endArray()
	got := p.values()

	want := []struct {
		oid   uint32
		value any
	}{
		{pgtype.TextOID, ids[2]},
		{pgtype.Int8OID, nums[4]},
		{pgtype.ByteaOID, payloads[2]},
		{pgtype.ByteaOID, []byte{}},
		{pgtype.TextArrayOID, ids},
		{pgtype.Int8ArrayOID, nums},
		// nil inside [][]byte would be a NULL element for pgx; the append
		// path never sends NULL payloads (the column is NOT NULL), so it
		// encodes nil as empty, like nonNil.
		{pgtype.ByteaArrayOID, [][]byte{{}, {}, payloads[2], payloads[3]}},
	}
	if len(got) != len(want) {
		t.Fatalf("%d parameters, want %d", len(got), len(want))
	}
	for i, w := range want {
		enc, err := m.Encode(w.oid, pgtype.BinaryFormatCode, w.value, nil)
		if err != nil {
			t.Fatalf("pgx encode %d: %v", i, err)
		}
		if enc == nil {
			enc = []byte{}
		}
		if !bytes.Equal(got[i], enc) {
			t.Errorf("parameter %d (oid %d): got %x, pgx sends %x", i, w.oid, got[i], enc)
		}
	}
	putParams(p)
	if p := getParams(); len(p.values()) != 0 {
		t.Fatalf("a pooled encoder kept %d parameters", len(p.values()))
	}
}

// TestPgParamsMisuse: a malformed array is a bug and must not reach the
// server as a statement whose parameters are misaligned.
func TestPgParamsMisuse(t *testing.T) {
	cases := map[string]func(p *pgParams){
		"TooFewElements": func(p *pgParams) {
			p.beginArray(pgtype.Int8OID, 2)
			p.elemInt8(1)
			p.endArray()
		},
		"TooManyElements": func(p *pgParams) {
			p.beginArray(pgtype.Int8OID, 1)
			p.elemInt8(1)
			p.elemInt8(2)
		},
		"ElementOutsideArray": func(p *pgParams) { p.elemBytea(nil) },
		"ScalarInsideArray": func(p *pgParams) {
			p.beginArray(pgtype.Int8OID, 1)
			p.int8(1)
		},
		"UnendedArray": func(p *pgParams) {
			p.beginArray(pgtype.Int8OID, 1)
			p.elemInt8(1)
			p.values()
		},
		"EmptyArray": func(p *pgParams) { p.beginArray(pgtype.Int8OID, 0) },
	}
	for name, fn := range cases {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Fatal("no panic")
				}
			}()
			fn(&pgParams{})
		})
	}
}

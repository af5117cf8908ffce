package persistence

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
)

// The append statements run once per accepted intent, so they bypass pgx's
// query layer: pgx encodes every argument through its type map (a plan
// looked up by reflect.Type, every array element boxed in an interface,
// [][]byte walked by reflection) and wraps results in rows objects, which
// under load cost several percent of a node's CPU. The few types these
// statements take (text, int8, bytea and one-dimensional arrays of them)
// have fixed binary wire formats, which pgParams writes straight into one
// reused buffer; the statements are prepared once per connection and run
// with pgconn, whose result reader reuses its buffers.

// Binary format code of the extended query protocol, for every parameter
// and result column.
var allBinary = []int16{pgtype.BinaryFormatCode}

// pgStatement is a statement the append path prepares under a fixed name
// on each connection it uses.
type pgStatement struct {
	name string
	sql  string
	// params are the parameter types PostgreSQL must infer from sql: the
	// binary encoding written for each parameter is only right for its
	// type, so a statement that does not match is refused before it runs.
	params []uint32
}

// pgParams encodes statement parameters in the binary format.
type pgParams struct {
	buf    []byte
	bounds []int    // start and end offset in buf of each parameter
	vals   [][]byte // views into buf, built by values
	// The array being written: its declared and written element counts.
	arrayLen, arrayElems int
	inArray              bool
}

var pgParamsPool = sync.Pool{New: func() any { return &pgParams{buf: make([]byte, 0, 512)} }}

// getParams returns an empty encoder; give it back with putParams once the
// statement was sent (pgconn copies the values into its own buffer).
func getParams() *pgParams { return pgParamsPool.Get().(*pgParams) }

func putParams(p *pgParams) {
	if cap(p.buf) > 64<<10 {
		return // a huge batch: let its buffer go rather than keep it forever
	}
	p.buf, p.bounds, p.vals = p.buf[:0], p.bounds[:0], p.vals[:0]
	p.inArray = false
	pgParamsPool.Put(p)
}

func (p *pgParams) start() {
	if p.inArray {
		panic("persistence: parameter started inside an array")
	}
	p.bounds = append(p.bounds, len(p.buf))
}

func (p *pgParams) end() { p.bounds = append(p.bounds, len(p.buf)) }

// text adds a text parameter (its binary format is the bytes).
func (p *pgParams) text(s string) {
	p.start()
	p.buf = append(p.buf, s...)
	p.end()
}

// int8 adds a bigint parameter.
func (p *pgParams) int8(v int64) {
	p.start()
	p.buf = binary.BigEndian.AppendUint64(p.buf, uint64(v))
	p.end()
}

// bytea adds a bytea parameter; nil is an empty value, not NULL.
func (p *pgParams) bytea(b []byte) {
	p.start()
	p.buf = append(p.buf, b...)
	p.end()
}

// beginArray starts a one-dimensional array parameter of n elements of
// type elem (n > 0), to be followed by exactly n elem* calls and endArray.
func (p *pgParams) beginArray(elem uint32, n int) {
	if n < 1 {
		panic("persistence: empty array parameter")
	}
	p.start()
	p.inArray, p.arrayLen, p.arrayElems = true, n, 0
	// Header: dimensions 1, no NULLs, element type, then the one
	// dimension's length and lower bound.
	p.buf = binary.BigEndian.AppendUint32(p.buf, 1)
	p.buf = binary.BigEndian.AppendUint32(p.buf, 0)
	p.buf = binary.BigEndian.AppendUint32(p.buf, elem)
	p.buf = binary.BigEndian.AppendUint32(p.buf, uint32(n))
	p.buf = binary.BigEndian.AppendUint32(p.buf, 1)
}

// elem writes one array element's length, leaving its bytes to the caller.
func (p *pgParams) elem(size int) {
	if !p.inArray || p.arrayElems == p.arrayLen {
		panic("persistence: array element outside its array")
	}
	p.arrayElems++
	p.buf = binary.BigEndian.AppendUint32(p.buf, uint32(size))
}

func (p *pgParams) elemText(s string) {
	p.elem(len(s))
	p.buf = append(p.buf, s...)
}

func (p *pgParams) elemInt8(v int64) {
	p.elem(8)
	p.buf = binary.BigEndian.AppendUint64(p.buf, uint64(v))
}

func (p *pgParams) elemBytea(b []byte) {
	p.elem(len(b))
	p.buf = append(p.buf, b...)
}

// endArray ends the array parameter begun last.
func (p *pgParams) endArray() {
	if !p.inArray || p.arrayElems != p.arrayLen {
		panic(fmt.Sprintf("persistence: array parameter has %d of %d elements", p.arrayElems, p.arrayLen))
	}
	p.inArray = false
	p.end()
}

// values returns the encoded parameters; they alias p's buffer.
func (p *pgParams) values() [][]byte {
	if p.inArray {
		panic("persistence: array parameter not ended")
	}
	p.vals = p.vals[:0]
	for i := 0; i < len(p.bounds); i += 2 {
		p.vals = append(p.vals, p.buf[p.bounds[i]:p.bounds[i+1]])
	}
	return p.vals
}

// execPrepared prepares st on conn (once per connection: pgx remembers
// it by name) and sends it with p's parameters, asking for binary result
// columns. The caller must Close the reader before using conn again; p
// may be reused as soon as this returns.
func execPrepared(ctx context.Context, conn *pgx.Conn, st *pgStatement, p *pgParams) (*pgconn.ResultReader, error) {
	sd, err := conn.Prepare(ctx, st.name, st.sql)
	if err != nil {
		return nil, fmt.Errorf("prepare %s: %w", st.name, err)
	}
	if !slices.Equal(sd.ParamOIDs, st.params) {
		return nil, fmt.Errorf("prepare %s: parameter types %v, want %v", st.name, sd.ParamOIDs, st.params)
	}
	return conn.PgConn().ExecStatement(ctx, sd, p.values(), allBinary, allBinary), nil
}

// forgetOnError drops st from conn after a server error that can mean the
// statement itself is gone or stale (it does not exist, or a schema change
// altered its result type), so the next use prepares it anew instead of
// failing on this connection forever.
func forgetOnError(conn *pgx.Conn, st *pgStatement, err error) {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && (pgErr.Code == "26000" || pgErr.Code == "0A000") {
		// Closing a statement the server no longer has is not an error.
		ctx, cancel := context.WithTimeout(context.Background(), deallocateTimeout)
		defer cancel()
		_ = conn.Deallocate(ctx, st.name) // if this fails too, the connection is broken and the pool drops it
	}
}

// deallocateTimeout bounds forgetting a stale statement.
const deallocateTimeout = 5 * time.Second

// execNoRows runs st, which returns no rows, on a pooled connection and
// returns its command tag once it has committed.
func (s *PostgresStore) execNoRows(ctx context.Context, st *pgStatement, p *pgParams) (pgconn.CommandTag, error) {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return pgconn.CommandTag{}, err
	}
	defer conn.Release()
	rr, err := execPrepared(ctx, conn.Conn(), st, p)
	if err != nil {
		return pgconn.CommandTag{}, err
	}
	tag, err := rr.Close()
	if err != nil {
		forgetOnError(conn.Conn(), st, err)
	}
	return tag, err
}

// execOrdinals runs st, whose one result column is a bigint, on conn from
// pool and calls row with each value. Only a nil error means the statement
// committed: row must not act on values before then.
func execOrdinals(ctx context.Context, pool *pgxpool.Pool, st *pgStatement, p *pgParams, row func(int64) error) error {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	rr, err := execPrepared(ctx, conn.Conn(), st, p)
	if err != nil {
		return err
	}
	var rowErr error
	for rr.NextRow() {
		if rowErr != nil {
			continue // read to the end: the connection must be left idle
		}
		vals := rr.Values()
		if len(vals) != 1 || len(vals[0]) != 8 {
			rowErr = fmt.Errorf("%s: unexpected result row shape", st.name)
			continue
		}
		rowErr = row(int64(binary.BigEndian.Uint64(vals[0])))
	}
	if _, err := rr.Close(); err != nil {
		forgetOnError(conn.Conn(), st, err)
		return err
	}
	return rowErr
}

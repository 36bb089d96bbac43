package segments

import (
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc64"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
)

// dbReadSizes are table sizes in rows: [1024] → [10240] items is the
// database-size instability scenario.
var dbReadSizes = []int{1024, 2048, 4096, 10240}

// dbWriteSizes are rows written per request.
var dbWriteSizes = []int{1, 16, 64, 256}

const (
	// maxDBReadRows bounds dbRead's table.
	maxDBReadRows = 1_000_000
	// maxDBWriteRows bounds one dbWrite statement (4 parameters per row,
	// PostgreSQL allows 65535).
	maxDBWriteRows = 10_000
	// dbWriteRing is the least number of keys a dbWrite table cycles
	// through; see dbWriteSeg.
	dbWriteRing = 4096
	// maxIdentifier is PostgreSQL's identifier length limit (NAMEDATALEN-1);
	// longer names are silently truncated.
	maxIdentifier = 63
)

// dbColumns are the columns of every db segment table.
var dbColumns = []string{"id", "key", "payload", "value"}

func init() {
	Register(Info{
		Name:  "dbRead",
		Unit:  "items",
		Sizes: dbReadSizes,
		Needs: []string{"db"},
		New: func(ctx context.Context, size int, env Env) (Instance, error) {
			return newDBRead(ctx, size, env)
		},
	})
	Register(Info{
		Name:  "dbWrite",
		Unit:  "items",
		Sizes: dbWriteSizes,
		Needs: []string{"db"},
		New: func(ctx context.Context, size int, env Env) (Instance, error) {
			return newDBWrite(ctx, size, env)
		},
	})
}

// dbRow is one row of a db segment table.
type dbRow struct {
	id      int64
	key     string
	payload string
	value   float64
}

// genDBRow returns the row with sequence number seq: key "<kind>-<seq>", a
// lorem payload of 100 to 200 bytes and a normally distributed value, all
// drawn from r.
func genDBRow(r *rand.Rand, kind string, seq, id int64) dbRow {
	return dbRow{
		id:      id,
		key:     kind + "-" + strconv.FormatInt(seq, 10),
		payload: string(genLorem(r, 100+r.IntN(101), false)),
		value:   r.NormFloat64() * 100,
	}
}

func (r dbRow) values() []any { return []any{r.id, r.key, r.payload, r.value} }

// hash is the row's digest: CRC-64/ECMA of the id, key, payload and value.
// A table's checksum is the xor of its rows' digests, which does not depend
// on the order a scan returns them in.
func (r dbRow) hash() uint64 {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], uint64(r.id))
	h := crc64.Update(0, crcTable, b[:])
	h = crc64.Update(h, crcTable, []byte(r.key))
	h = crc64.Update(h, crcTable, []byte{0})
	h = crc64.Update(h, crcTable, []byte(r.payload))
	binary.LittleEndian.PutUint64(b[:], math.Float64bits(r.value))
	return crc64.Update(h, crcTable, b[:])
}

// rowFromValues converts the values of a scanned row.
func rowFromValues(v []any) (dbRow, error) {
	if len(v) != 4 {
		return dbRow{}, fmt.Errorf("row has %d values, want 4", len(v))
	}
	id, ok1 := v[0].(int64)
	key, ok2 := v[1].(string)
	payload, ok3 := v[2].(string)
	value, ok4 := v[3].(float64)
	if !ok1 || !ok2 || !ok3 || !ok4 {
		return dbRow{}, fmt.Errorf("row values have types %T, %T, %T, %T; want int64, string, string, float64", v...)
	}
	return dbRow{id: id, key: key, payload: payload, value: value}, nil
}

// dbTable is one instance's table.
type dbTable struct {
	db     Database
	name   string // unquoted: for CopyRows and messages
	quoted string // for SQL text
}

// createDBTable creates a table named from kind, the seed, the instance and
// this process (serviceName), so it never collides with another's.
func createDBTable(ctx context.Context, kind string, env Env) (dbTable, error) {
	name := "aware_" + strings.ToLower(serviceName(kind, env))
	if len(name) > maxIdentifier {
		return dbTable{}, fmt.Errorf("table name %s is longer than PostgreSQL's %d bytes", name, maxIdentifier)
	}
	t := dbTable{db: env.DB, name: name, quoted: pgx.Identifier{name}.Sanitize()}
	_, err := t.db.Exec(ctx, "CREATE TABLE "+t.quoted+
		" (id bigint PRIMARY KEY, key text NOT NULL, payload text NOT NULL, value double precision NOT NULL)")
	if err != nil {
		return dbTable{}, fmt.Errorf("create table %s: %w", name, err)
	}
	return t, nil
}

func (t dbTable) drop(ctx context.Context) error {
	if _, err := t.db.Exec(ctx, "DROP TABLE IF EXISTS "+t.quoted); err != nil {
		return fmt.Errorf("drop table %s: %w", t.name, err)
	}
	return nil
}

// scan reads the whole table and returns its row count, payload bytes and
// checksum.
func (t dbTable) scan(ctx context.Context) (rows, payload int64, sum uint64, err error) {
	err = t.db.Query(ctx, "SELECT id, key, payload, value FROM "+t.quoted, func(v []any) error {
		r, err := rowFromValues(v)
		if err != nil {
			return err
		}
		rows++
		payload += int64(len(r.payload))
		sum ^= r.hash()
		return nil
	})
	if err != nil {
		return 0, 0, 0, fmt.Errorf("scan table %s: %w", t.name, err)
	}
	return rows, payload, sum, nil
}

// dbReadSeg scans a table bulk-loaded at setup with Size rows (Sizeless'
// DynamoDB read, here a full-table SELECT) and checks the row count and
// checksum per request. Close drops the table.
type dbReadSeg struct {
	table dbTable
	rows  int64
	sum   uint64
}

func newDBRead(ctx context.Context, size int, env Env) (_ *dbReadSeg, err error) {
	if err := checkMax(size, maxDBReadRows, "items"); err != nil {
		return nil, err
	}
	r := inputRand(env, "dbRead")
	rows := make([][]any, size)
	var sum uint64
	for i := range rows {
		row := genDBRow(r, "r", int64(i), int64(i))
		rows[i] = row.values()
		sum ^= row.hash()
	}
	t, err := createDBTable(ctx, "dbRead", env)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, t.drop(context.WithoutCancel(ctx)))
		}
	}()
	n, err := t.db.CopyRows(ctx, t.name, dbColumns, rows)
	if err != nil {
		return nil, fmt.Errorf("load table %s: %w", t.name, err)
	}
	if n != int64(size) {
		return nil, fmt.Errorf("load table %s: copied %d rows, want %d", t.name, n, size)
	}
	return &dbReadSeg{table: t, rows: int64(size), sum: sum}, nil
}

func (s *dbReadSeg) Run(ctx context.Context) (Result, error) {
	rows, payload, sum, err := s.table.scan(ctx)
	if err != nil {
		return Result{}, fmt.Errorf("dbRead: %w", err)
	}
	if rows != s.rows || sum != s.sum {
		return Result{}, fmt.Errorf("dbRead %s: read %d rows with checksum %#x, want %d rows with %#x (table changed since setup)",
			s.table.name, rows, sum, s.rows, s.sum)
	}
	return Result{BytesIn: payload, Items: rows, Checksum: sum}, nil
}

func (s *dbReadSeg) Close(ctx context.Context) error { return s.table.drop(ctx) }

// dbWriteSeg upserts Size rows per request (Sizeless' DynamoDB write) with
// one multi-row INSERT ... ON CONFLICT (id) DO UPDATE. Request k writes the
// rows with sequence numbers k·Size to (k+1)·Size−1; row seq goes to id
// seq mod ring, ring = max(4096, 4·Size), so the table never holds more than
// ring rows while every request still writes Size rows. Rows are sent in
// id order, so concurrent requests that meet on the ring lock rows in the
// same order and cannot deadlock. Close drops the table.
type dbWriteSeg struct {
	table dbTable
	size  int
	ring  int64
	seed  uint64
	sql   string
	next  atomic.Int64
}

func newDBWrite(ctx context.Context, size int, env Env) (*dbWriteSeg, error) {
	if err := checkMax(size, maxDBWriteRows, "items"); err != nil {
		return nil, err
	}
	t, err := createDBTable(ctx, "dbWrite", env)
	if err != nil {
		return nil, err
	}
	return &dbWriteSeg{
		table: t,
		size:  size,
		ring:  int64(max(dbWriteRing, 4*size)),
		seed:  inputRand(env, "dbWrite").Uint64(),
		sql:   upsertSQL(t.quoted, size),
	}, nil
}

// upsertSQL is an INSERT of n rows of dbColumns that replaces rows with the
// same id.
func upsertSQL(quotedTable string, n int) string {
	var b strings.Builder
	b.WriteString("INSERT INTO " + quotedTable + " (id, key, payload, value) VALUES ")
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		p := 4*i + 1
		fmt.Fprintf(&b, "($%d, $%d, $%d, $%d)", p, p+1, p+2, p+3)
	}
	b.WriteString(" ON CONFLICT (id) DO UPDATE SET key = EXCLUDED.key, payload = EXCLUDED.payload, value = EXCLUDED.value")
	return b.String()
}

// rowsFor returns the rows with sequence numbers first..first+n-1 in id
// order. Each row's content depends only on the seed and its sequence
// number.
func (s *dbWriteSeg) rowsFor(first int64) []dbRow {
	rows := make([]dbRow, s.size)
	for i := range rows {
		seq := first + int64(i)
		r := rand.New(rand.NewPCG(s.seed, uint64(seq)))
		rows[i] = genDBRow(r, "w", seq, seq%s.ring)
	}
	slices.SortFunc(rows, func(a, b dbRow) int { return cmp.Compare(a.id, b.id) })
	return rows
}

func (s *dbWriteSeg) Run(ctx context.Context) (Result, error) {
	first := s.next.Add(int64(s.size)) - int64(s.size)
	rows := s.rowsFor(first)
	args := make([]any, 0, 4*len(rows))
	var res Result
	for _, r := range rows {
		args = append(args, r.values()...)
		res.BytesOut += int64(len(r.payload))
		res.Checksum ^= r.hash()
	}
	n, err := s.table.db.Exec(ctx, s.sql, args...)
	if err != nil {
		return Result{}, fmt.Errorf("dbWrite %s: %w", s.table.name, err)
	}
	if n != int64(s.size) {
		return Result{}, fmt.Errorf("dbWrite %s: wrote %d rows, want %d", s.table.name, n, s.size)
	}
	res.Items = n
	return res, nil
}

func (s *dbWriteSeg) Close(ctx context.Context) error { return s.table.drop(ctx) }

package segments

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aware-autoscaler/aware/workloads/database"
)

// realDB returns a connection to the package's PostgreSQL server.
func realDB(t testing.TB) *database.DB {
	t.Helper()
	s := &services
	s.dbOnce.Do(func() {
		ctx := context.Background()
		if s.dbDir, s.dbErr = os.MkdirTemp("", "segments-pg-"); s.dbErr != nil {
			return
		}
		if s.pg, s.dbErr = database.StartLocal(ctx, s.dbDir); s.dbErr != nil {
			return
		}
		s.db, s.dbErr = database.Connect(ctx, s.pg.URL())
	})
	skipIfMissing(t, s.dbErr)
	return s.db
}

// tableRows reads a table's rows ordered by id.
func tableRows(t *testing.T, db Database, table dbTable) []dbRow {
	t.Helper()
	var rows []dbRow
	require.NoError(t, db.Query(t.Context(), "SELECT id, key, payload, value FROM "+table.quoted+" ORDER BY id",
		func(v []any) error {
			r, err := rowFromValues(v)
			rows = append(rows, r)
			return err
		}))
	return rows
}

func tableExists(t *testing.T, db Database, name string) bool {
	t.Helper()
	var exists bool
	require.NoError(t, db.Query(t.Context(), "SELECT to_regclass($1) IS NOT NULL", func(v []any) error {
		exists = v[0].(bool)
		return nil
	}, name))
	return exists
}

func TestDBSegmentsRegistered(t *testing.T) {
	for name, sizes := range map[string][]int{"dbRead": dbReadSizes, "dbWrite": dbWriteSizes} {
		info, ok := Lookup(name)
		require.True(t, ok, name)
		assert.Equal(t, "items", info.Unit)
		assert.Equal(t, []string{"db"}, info.Needs)
		assert.Equal(t, sizes, info.Sizes)
		_, err := New(t.Context(), Spec{Name: name, Size: 1}, Env{})
		assert.ErrorContains(t, err, "needs a database")
	}
}

func TestGenDBRow(t *testing.T) {
	gen := func(seed uint64) []dbRow {
		r := rand.New(rand.NewPCG(seed, 1))
		rows := make([]dbRow, 200)
		for i := range rows {
			rows[i] = genDBRow(r, "r", int64(i), int64(i))
		}
		return rows
	}
	a, b, c := gen(1), gen(1), gen(2)
	assert.Equal(t, a, b, "deterministic")
	assert.NotEqual(t, a, c)
	for i, r := range a {
		assert.Equal(t, "r-"+strconv.Itoa(i), r.key)
		assert.GreaterOrEqual(t, len(r.payload), 100)
		assert.LessOrEqual(t, len(r.payload), 200)
		assert.NotEqual(t, r.hash(), c[i].hash())
	}
	changed := a[0]
	changed.value += 1e-9
	assert.NotEqual(t, a[0].hash(), changed.hash(), "the hash covers the value")
}

func TestRowFromValues(t *testing.T) {
	r, err := rowFromValues([]any{int64(1), "k", "p", 2.5})
	require.NoError(t, err)
	assert.Equal(t, dbRow{id: 1, key: "k", payload: "p", value: 2.5}, r)
	_, err = rowFromValues([]any{int32(1), "k", "p", 2.5})
	assert.ErrorContains(t, err, "types int32, string, string, float64")
	_, err = rowFromValues([]any{int64(1)})
	assert.ErrorContains(t, err, "row has 1 values, want 4")
}

func TestUpsertSQL(t *testing.T) {
	sql := upsertSQL(`"t"`, 3)
	assert.Equal(t, `INSERT INTO "t" (id, key, payload, value) VALUES ($1, $2, $3, $4), ($5, $6, $7, $8), ($9, $10, $11, $12)`+
		` ON CONFLICT (id) DO UPDATE SET key = EXCLUDED.key, payload = EXCLUDED.payload, value = EXCLUDED.value`, sql)
	assert.Contains(t, upsertSQL(`"t"`, maxDBWriteRows), fmt.Sprintf("$%d)", 4*maxDBWriteRows))
}

func TestDBWriteRowsFor(t *testing.T) {
	s := &dbWriteSeg{size: 64, ring: 100, seed: 7}
	rows := s.rowsFor(80) // sequence numbers 80..143 wrap around the ring
	ids := make([]int64, len(rows))
	for i, r := range rows {
		ids[i] = r.id
		seq, err := strconv.ParseInt(strings.TrimPrefix(r.key, "w-"), 10, 64)
		require.NoError(t, err)
		assert.Equal(t, seq%100, r.id)
	}
	assert.True(t, slices.IsSorted(ids), "rows are in id order")
	assert.Len(t, slices.Compact(ids), 64, "ids are distinct")
	assert.Equal(t, rows, s.rowsFor(80), "deterministic")
}

func TestServiceNamesAreSafeAndUnique(t *testing.T) {
	ident := regexp.MustCompile(`^[a-z0-9_]+$`)
	seen := map[string]bool{}
	for _, env := range []Env{{Seed: -1, Instance: 999}, {Seed: 0}, {Seed: 0}, {Seed: 1 << 62, Instance: 12}} {
		name := "aware_" + strings.ToLower(serviceName("dbWrite", env))
		assert.Regexp(t, ident, name)
		assert.LessOrEqual(t, len(name), maxIdentifier, name)
		assert.False(t, seen[name], "duplicate %s", name)
		seen[name] = true
	}
}

// failDB is a Database whose every call fails after the first n succeed.
type failDB struct {
	n     int
	calls []string
}

func (f *failDB) step(what string) error {
	f.calls = append(f.calls, what)
	if len(f.calls) > f.n {
		return errors.New("injected failure")
	}
	return nil
}

func (f *failDB) Exec(_ context.Context, sql string, _ ...any) (int64, error) {
	return 0, f.step(strings.Fields(sql)[0])
}

func (f *failDB) Query(_ context.Context, _ string, _ func([]any) error, _ ...any) error {
	return f.step("SELECT")
}

func (f *failDB) CopyRows(_ context.Context, _ string, _ []string, rows [][]any) (int64, error) {
	return int64(len(rows)), f.step("COPY")
}

func TestDBReadSetupFailureDropsTable(t *testing.T) {
	f := &failDB{n: 1} // CREATE works, COPY fails
	_, err := New(t.Context(), Spec{Name: "dbRead", Size: 10}, Env{DB: f})
	require.ErrorContains(t, err, "injected failure")
	assert.Equal(t, []string{"CREATE", "COPY", "DROP"}, f.calls, "the half-made table is dropped")
}

func TestDBReadRealDatabase(t *testing.T) {
	db := realDB(t)
	ctx := t.Context()
	for _, size := range dbReadSizes {
		t.Run(strconv.Itoa(size), func(t *testing.T) {
			inst, err := New(ctx, Spec{Name: "dbRead", Size: size}, Env{DB: db, Seed: 21, Instance: 1})
			require.NoError(t, err)
			seg := inst.(*dbReadSeg)
			r, err := inst.Run(ctx)
			require.NoError(t, err)
			assert.Equal(t, int64(size), r.Items)
			assert.GreaterOrEqual(t, r.BytesIn, int64(100*size))
			assert.LessOrEqual(t, r.BytesIn, int64(200*size))

			// The checksum is that of the rows actually stored.
			var sum uint64
			var payload int64
			rows := tableRows(t, db, seg.table)
			require.Len(t, rows, size)
			for i, row := range rows {
				assert.Equal(t, int64(i), row.id)
				sum ^= row.hash()
				payload += int64(len(row.payload))
			}
			assert.Equal(t, Result{BytesIn: payload, Items: int64(size), Checksum: sum}, r)

			require.NoError(t, inst.Close(ctx))
			assert.False(t, tableExists(t, db, seg.table.name), "close drops the table")
		})
	}
}

func TestDBReadSameSeedSeparateTables(t *testing.T) {
	db := realDB(t)
	ctx := t.Context()
	env := Env{DB: db, Seed: 5}
	a, err := New(ctx, Spec{Name: "dbRead", Size: 1024}, env)
	require.NoError(t, err)
	defer a.Close(ctx)
	b, err := New(ctx, Spec{Name: "dbRead", Size: 1024}, env)
	require.NoError(t, err)
	defer b.Close(ctx)
	assert.NotEqual(t, a.(*dbReadSeg).table.name, b.(*dbReadSeg).table.name)
	ra, err := a.Run(ctx)
	require.NoError(t, err)
	rb, err := b.Run(ctx)
	require.NoError(t, err)
	assert.Equal(t, ra, rb, "same seed, same content")
}

func TestDBReadDetectsChanges(t *testing.T) {
	db := realDB(t)
	ctx := t.Context()
	inst, err := New(ctx, Spec{Name: "dbRead", Size: 1024}, Env{DB: db, Seed: 1})
	require.NoError(t, err)
	defer inst.Close(ctx)
	q := inst.(*dbReadSeg).table.quoted
	_, err = db.Exec(ctx, "UPDATE "+q+" SET payload = payload || '!' WHERE id = 17")
	require.NoError(t, err)
	_, err = inst.Run(ctx)
	require.ErrorContains(t, err, "table changed since setup")

	_, err = db.Exec(ctx, "DROP TABLE "+q)
	require.NoError(t, err)
	_, err = inst.Run(ctx)
	require.ErrorContains(t, err, "does not exist")
}

// TestDBWriteRealDatabase checks that what the table holds after N requests
// is exactly what the requests reported writing.
func TestDBWriteRealDatabase(t *testing.T) {
	db := realDB(t)
	ctx := t.Context()
	for _, size := range dbWriteSizes {
		t.Run(strconv.Itoa(size), func(t *testing.T) {
			inst, err := New(ctx, Spec{Name: "dbWrite", Size: size}, Env{DB: db, Seed: 3, Instance: 2})
			require.NoError(t, err)
			seg := inst.(*dbWriteSeg)
			const runs = 5
			var total Result
			var sum uint64
			for range runs {
				r, err := inst.Run(ctx)
				require.NoError(t, err)
				assert.Equal(t, int64(size), r.Items)
				total.Items += r.Items
				total.BytesOut += r.BytesOut
				sum ^= r.Checksum
			}
			rows := tableRows(t, db, seg.table)
			require.Len(t, rows, runs*size, "rows read = rows written")
			var stored uint64
			var payload int64
			for i, row := range rows {
				assert.Equal(t, fmt.Sprintf("w-%d", i), row.key)
				stored ^= row.hash()
				payload += int64(len(row.payload))
			}
			assert.Equal(t, sum, stored, "the table holds the rows the requests reported")
			assert.Equal(t, total.BytesOut, payload)

			require.NoError(t, inst.Close(ctx))
			assert.False(t, tableExists(t, db, seg.table.name), "close drops the table")
		})
	}
}

func TestDBWriteTableStaysBounded(t *testing.T) {
	db := realDB(t)
	ctx := t.Context()
	inst, err := New(ctx, Spec{Name: "dbWrite", Size: 256}, Env{DB: db, Seed: 4})
	require.NoError(t, err)
	defer inst.Close(ctx)
	seg := inst.(*dbWriteSeg)
	require.Equal(t, int64(dbWriteRing), seg.ring)
	runs := dbWriteRing/256 + 3 // wraps around the ring
	for range runs {
		_, err := inst.Run(ctx)
		require.NoError(t, err)
	}
	rows := tableRows(t, db, seg.table)
	require.Len(t, rows, dbWriteRing, "at most ring rows")
	last := int64(runs*256 - 1)
	for _, row := range rows {
		seq, err := strconv.ParseInt(strings.TrimPrefix(row.key, "w-"), 10, 64)
		require.NoError(t, err)
		assert.Equal(t, seq%dbWriteRing, row.id)
		assert.Greater(t, seq, last-dbWriteRing, "each id holds its latest write")
	}
}

func TestDBWriteConcurrentRuns(t *testing.T) {
	db := realDB(t)
	ctx := t.Context()
	// Size 1024 gives the smallest ring (4 requests), so concurrent
	// requests overwrite each other's rows: they must not deadlock.
	inst, err := New(ctx, Spec{Name: "dbWrite", Size: 1024}, Env{DB: db, Seed: 9})
	require.NoError(t, err)
	defer inst.Close(ctx)
	seg := inst.(*dbWriteSeg)
	var wg sync.WaitGroup
	for range 6 {
		wg.Go(func() {
			for range 3 {
				_, err := inst.Run(ctx)
				assert.NoError(t, err)
			}
		})
	}
	wg.Wait()
	assert.Len(t, tableRows(t, db, seg.table), 4*1024)
}

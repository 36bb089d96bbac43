package database_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aware-autoscaler/aware/workloads/database"
	"github.com/aware-autoscaler/aware/workloads/segments"
)

var _ segments.Database = (*database.DB)(nil)

// shared is one server for the whole package, started on first use.
var shared struct {
	once  sync.Once
	dir   string
	local *database.Local
	err   error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if shared.local != nil {
		if err := shared.local.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}
	if shared.dir != "" {
		_ = os.RemoveAll(shared.dir)
	}
	os.Exit(code)
}

// local returns the shared server, skipping the test if PostgreSQL is not
// installed (failing instead when CI=true).
func local(t *testing.T) *database.Local {
	t.Helper()
	shared.once.Do(func() {
		shared.dir, shared.err = os.MkdirTemp("", "database-test-")
		if shared.err == nil {
			shared.local, shared.err = database.StartLocal(context.Background(), shared.dir)
		}
	})
	if errors.Is(shared.err, database.ErrNoBinary) && os.Getenv("CI") != "true" {
		t.Skipf("skipping: %v", shared.err)
	}
	require.NoError(t, shared.err)
	return shared.local
}

func connect(t *testing.T, url string, opts ...database.Option) *database.DB {
	t.Helper()
	db, err := database.Connect(t.Context(), url, opts...)
	require.NoError(t, err)
	t.Cleanup(db.Close)
	return db
}

func TestExecQueryCopy(t *testing.T) {
	db := connect(t, local(t).URL())
	ctx := t.Context()
	_, err := db.Exec(ctx, `CREATE TABLE copytest (id bigint PRIMARY KEY, name text, score double precision)`)
	require.NoError(t, err)
	t.Cleanup(func() { _, _ = db.Exec(context.Background(), `DROP TABLE copytest`) })

	rows := [][]any{{int64(1), "one", 1.5}, {int64(2), "two", -2.25}, {int64(3), "three", 0.0}}
	n, err := db.CopyRows(ctx, "copytest", []string{"id", "name", "score"}, rows)
	require.NoError(t, err)
	assert.Equal(t, int64(3), n)

	var got [][]any
	err = db.Query(ctx, `SELECT id, name, score FROM copytest WHERE id >= $1 ORDER BY id`, func(v []any) error {
		got = append(got, v)
		return nil
	}, 1)
	require.NoError(t, err)
	assert.Equal(t, rows, got, "values come back with their Go types")

	affected, err := db.Exec(ctx, `UPDATE copytest SET score = score * 2 WHERE id > $1`, 1)
	require.NoError(t, err)
	assert.Equal(t, int64(2), affected)

	n, err = db.CopyRows(ctx, "public.copytest", []string{"id", "name", "score"}, [][]any{{int64(4), "four", 4.0}})
	require.NoError(t, err, "schema-qualified table")
	assert.Equal(t, int64(1), n)
}

func TestQueryScanErrorStops(t *testing.T) {
	db := connect(t, local(t).URL())
	stop := errors.New("enough")
	calls := 0
	err := db.Query(t.Context(), `SELECT generate_series(1, 1000)`, func([]any) error {
		calls++
		if calls == 3 {
			return stop
		}
		return nil
	})
	require.ErrorIs(t, err, stop)
	assert.Equal(t, 3, calls)
	// The connection is reusable afterwards.
	_, err = db.Exec(t.Context(), `SELECT 1`)
	require.NoError(t, err)
}

func TestErrorsNameTheProblem(t *testing.T) {
	db := connect(t, local(t).URL())
	ctx := t.Context()
	_, err := db.Exec(ctx, `SELEKT 1`)
	require.ErrorContains(t, err, `exec "SELEKT 1"`)
	assert.ErrorContains(t, err, "syntax error")

	err = db.Query(ctx, `SELECT * FROM no_such_table`, func([]any) error { return nil })
	require.ErrorContains(t, err, "no_such_table")

	_, err = db.CopyRows(ctx, "t", []string{"a", "b"}, [][]any{{1, 2}, {3}})
	require.ErrorContains(t, err, "row 1 has 1 values for 2 columns")

	_, err = db.CopyRows(ctx, "", []string{"a"}, nil)
	require.ErrorContains(t, err, "table name is empty")

	// A hostile table name is one quoted identifier, never SQL.
	_, err = db.Exec(ctx, `CREATE TABLE victim (a int)`)
	require.NoError(t, err)
	t.Cleanup(func() { _, _ = db.Exec(context.Background(), `DROP TABLE victim`) })
	_, err = db.CopyRows(ctx, `victim"; DROP TABLE victim; --`, []string{"a"}, [][]any{{int32(1)}})
	require.ErrorContains(t, err, "does not exist")
	_, err = db.Exec(ctx, `SELECT * FROM victim`)
	require.NoError(t, err, "victim table survived")
}

func TestPoolBoundsConnections(t *testing.T) {
	url := local(t).URL() + "&application_name=pooltest"
	db := connect(t, url, database.WithMaxConns(2))
	ctx := t.Context()
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		maxSeen int64
		errs    []error
	)
	for range 6 {
		wg.Go(func() {
			err := db.Query(ctx, `SELECT count(*) FROM pg_stat_activity, pg_sleep(0.05)
				WHERE application_name = 'pooltest'`, func(v []any) error {
				mu.Lock()
				maxSeen = max(maxSeen, v[0].(int64))
				mu.Unlock()
				return nil
			})
			mu.Lock()
			errs = append(errs, err)
			mu.Unlock()
		})
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	assert.Equal(t, int64(2), maxSeen, "two connections in use at the peak, never more")
}

func TestCancelledQueryDoesNotPoisonPool(t *testing.T) {
	db := connect(t, local(t).URL(), database.WithMaxConns(1))
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := db.Exec(ctx, `SELECT pg_sleep(10)`)
	require.Error(t, err)
	assert.Less(t, time.Since(start), 5*time.Second)
	_, err = db.Exec(t.Context(), `SELECT 1`)
	require.NoError(t, err)
}

func TestClose(t *testing.T) {
	db, err := database.Connect(t.Context(), local(t).URL())
	require.NoError(t, err)
	db.Close()
	_, err = db.Exec(t.Context(), `SELECT 1`)
	require.ErrorContains(t, err, "closed pool")
}

func TestConnectErrors(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	closed := l.Addr().(*net.TCPAddr).Port
	require.NoError(t, l.Close())

	tests := []struct {
		name, url string
		opts      []database.Option
		want      string
	}{
		{name: "empty", url: " ", want: "database URL: required (AWARE_DATABASE_URL)"},
		{name: "malformed", url: "postgres://a:b@host:notaport/db", want: "database URL:"},
		{name: "unreachable", url: fmt.Sprintf("postgres://u:s3cr3t@127.0.0.1:%d/aware?connect_timeout=2", closed),
			want: fmt.Sprintf("database u@127.0.0.1:%d/aware: connect", closed)},
		{name: "bad option", url: "postgres://127.0.0.1/x", opts: []database.Option{database.WithMaxConns(0)},
			want: "max conns 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := database.Connect(t.Context(), tt.url, tt.opts...)
			require.ErrorContains(t, err, tt.want)
			assert.NotContains(t, err.Error(), "s3cr3t", "the password is never shown")
		})
	}
}

func TestConnectUnknownDatabase(t *testing.T) {
	url := local(t).URL()
	_, err := database.Connect(t.Context(), url[:len(url)-len("aware?sslmode=disable")]+"nope?sslmode=disable")
	require.ErrorContains(t, err, `database "nope" does not exist`)
}

func TestURLFromEnv(t *testing.T) {
	t.Setenv("AWARE_DATABASE_URL", " postgres://x@h/db \n")
	assert.Equal(t, "postgres://x@h/db", database.URLFromEnv())
	t.Setenv("AWARE_DATABASE_URL", "")
	assert.Empty(t, database.URLFromEnv())
}

// TestStartLocalRestart starts a second server in a fresh 0700 temp dir
// (as t.TempDir makes them), stops it, and starts it again on the same
// cluster: the data survives and the database is not created twice.
func TestStartLocalRestart(t *testing.T) {
	local(t)
	dir := t.TempDir()
	l, err := database.StartLocal(t.Context(), dir)
	require.NoError(t, err)
	db, err := database.Connect(t.Context(), l.URL())
	require.NoError(t, err)
	_, err = db.Exec(t.Context(), `CREATE TABLE kept (v text); INSERT INTO kept VALUES ('hello')`)
	require.NoError(t, err)
	db.Close()
	require.NoError(t, l.Stop())
	require.NoError(t, l.Stop(), "stop is idempotent")
	_, err = database.Connect(t.Context(), l.URL()+"&connect_timeout=2")
	require.Error(t, err, "stopped")

	l2, err := database.StartLocal(t.Context(), dir)
	require.NoError(t, err)
	defer func() { require.NoError(t, l2.Stop()) }()
	db2 := connect(t, l2.URL())
	var got []any
	require.NoError(t, db2.Query(t.Context(), `SELECT v FROM kept`, func(v []any) error {
		got = append(got, v...)
		return nil
	}))
	assert.Equal(t, []any{"hello"}, got)
	assert.FileExists(t, dir+"/postgres.log")
}

func TestStartLocalMissingBinaries(t *testing.T) {
	t.Setenv("AWARE_PG_BINDIR", "/nonexistent/bin")
	_, err := database.StartLocal(t.Context(), t.TempDir())
	require.ErrorIs(t, err, database.ErrNoBinary)
	assert.ErrorContains(t, err, "AWARE_PG_BINDIR=/nonexistent/bin")
}

func TestStartLocalReportsLog(t *testing.T) {
	local(t)
	// A stand-in postgres that fails at once: the error carries its log.
	bin := t.TempDir()
	require.NoError(t, os.Chmod(bin, 0o755)) // the server user runs these
	for name, script := range map[string]string{
		"initdb":   "#!/bin/sh\nexit 0\n",
		"postgres": "#!/bin/sh\necho 'FATAL:  simulated failure' >&2\nexit 1\n",
	} {
		require.NoError(t, os.WriteFile(bin+"/"+name, []byte(script), 0o755))
	}
	t.Setenv("AWARE_PG_BINDIR", bin)
	_, err := database.StartLocal(t.Context(), t.TempDir())
	require.Error(t, err)
	assert.ErrorContains(t, err, "exited during start")
	assert.ErrorContains(t, err, "FATAL:  simulated failure")
}

func TestStartLocalReportsInitdbOutput(t *testing.T) {
	local(t)
	bin := t.TempDir()
	require.NoError(t, os.Chmod(bin, 0o755))
	require.NoError(t, os.WriteFile(bin+"/initdb", []byte("#!/bin/sh\necho 'initdb: error: simulated' >&2\nexit 1\n"), 0o755))
	require.NoError(t, os.WriteFile(bin+"/postgres", []byte("#!/bin/sh\nexit 1\n"), 0o755))
	t.Setenv("AWARE_PG_BINDIR", bin)
	_, err := database.StartLocal(t.Context(), t.TempDir())
	require.ErrorContains(t, err, "initdb")
	assert.ErrorContains(t, err, "initdb: error: simulated")
}

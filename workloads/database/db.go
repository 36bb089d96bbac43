package database

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// EnvURL is the environment variable URLFromEnv reads.
const EnvURL = "AWARE_DATABASE_URL"

// URLFromEnv returns $AWARE_DATABASE_URL (empty if unset).
func URLFromEnv() string { return strings.TrimSpace(os.Getenv(EnvURL)) }

// DB is a pool of connections to one PostgreSQL database. It is safe for
// concurrent use and implements segments.Database.
type DB struct {
	pool *pgxpool.Pool
	name string // user@host:port/database, for error messages (no password)
}

// Option configures Connect.
type Option func(*options) error

type options struct{ maxConns int }

// WithMaxConns sets how many connections may be open at once (default: the
// larger of 4 and the number of CPUs); more concurrent calls wait.
func WithMaxConns(n int) Option {
	return func(o *options) error {
		if n < 1 {
			return fmt.Errorf("max conns %d: must be at least 1", n)
		}
		o.maxConns = n
		return nil
	}
}

// Connect opens a pool for url (postgres://user@host:port/db?... or a
// key=value DSN) and checks that the server answers.
func Connect(ctx context.Context, url string, opts ...Option) (*DB, error) {
	if strings.TrimSpace(url) == "" {
		return nil, fmt.Errorf("database URL: required (%s)", EnvURL)
	}
	pc, err := pgxpool.ParseConfig(url)
	if err != nil {
		// pgx redacts the password in its parse errors.
		return nil, fmt.Errorf("database URL: %w", err)
	}
	o := options{maxConns: max(4, runtime.NumCPU())}
	for _, opt := range opts {
		if err := opt(&o); err != nil {
			return nil, fmt.Errorf("database: %w", err)
		}
	}
	pc.MaxConns = int32(o.maxConns)
	cc := pc.ConnConfig
	name := fmt.Sprintf("%s@%s:%d/%s", cc.User, cc.Host, cc.Port, cc.Database)
	p, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		return nil, fmt.Errorf("database %s: %w", name, err)
	}
	// Open the first connection now, so that a wrong URL fails here.
	if err := p.Ping(ctx); err != nil {
		p.Close()
		return nil, fmt.Errorf("database %s: connect: %w", name, err)
	}
	return &DB{pool: p, name: name}, nil
}

// with runs f on a pooled connection.
func (d *DB) with(ctx context.Context, f func(*pgx.Conn) error) error {
	c, err := d.pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer c.Release()
	return f(c.Conn())
}

// Name returns user@host:port/database.
func (d *DB) Name() string { return d.name }

// Close closes the pool, waiting for connections in use to be released;
// later calls fail.
func (d *DB) Close() { d.pool.Close() }

// Exec runs a statement and returns the number of rows it affected.
func (d *DB) Exec(ctx context.Context, sql string, args ...any) (int64, error) {
	var n int64
	err := d.with(ctx, func(c *pgx.Conn) error {
		tag, err := c.Exec(ctx, sql, args...)
		n = tag.RowsAffected()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("database %s: exec %s: %w", d.name, abbrev(sql), err)
	}
	return n, nil
}

// Query runs sql and calls scan once per row with the row's values, as
// decoded by pgx (bigint as int64, text as string, double precision as
// float64, ...). An error from scan stops the query and is returned wrapped.
func (d *DB) Query(ctx context.Context, sql string, scan func(values []any) error, args ...any) error {
	err := d.with(ctx, func(c *pgx.Conn) error {
		rows, err := c.Query(ctx, sql, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			vals, err := rows.Values()
			if err != nil {
				return fmt.Errorf("decode row: %w", err)
			}
			if err := scan(vals); err != nil {
				return err
			}
		}
		return rows.Err()
	})
	if err != nil {
		return fmt.Errorf("database %s: query %s: %w", d.name, abbrev(sql), err)
	}
	return nil
}

// CopyRows bulk-inserts rows into table with COPY. table is a name, or
// schema.name; each part is quoted, so it is never interpreted as SQL.
func (d *DB) CopyRows(ctx context.Context, table string, columns []string, rows [][]any) (int64, error) {
	if table == "" {
		return 0, errors.New("copy rows: table name is empty")
	}
	for i, r := range rows {
		if len(r) != len(columns) {
			return 0, fmt.Errorf("copy rows into %s: row %d has %d values for %d columns", table, i, len(r), len(columns))
		}
	}
	var n int64
	err := d.with(ctx, func(c *pgx.Conn) error {
		var err error
		n, err = c.CopyFrom(ctx, pgx.Identifier(strings.Split(table, ".")), columns, pgx.CopyFromRows(rows))
		return err
	})
	if err != nil {
		return n, fmt.Errorf("database %s: copy %d rows into %s: %w", d.name, len(rows), table, err)
	}
	return n, nil
}

// abbrev shortens a statement for error messages.
func abbrev(sql string) string {
	s := strings.Join(strings.Fields(sql), " ")
	if len(s) > 60 {
		s = s[:57] + "..."
	}
	return fmt.Sprintf("%q", s)
}

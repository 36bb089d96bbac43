package segments

import (
	"context"
	"io"
)

// ObjectStore is the part of an S3-compatible store the object segments use.
type ObjectStore interface {
	Put(ctx context.Context, key string, r io.Reader, size int64) error
	// Get returns a reader of the whole object; the caller closes it.
	Get(ctx context.Context, key string) (io.ReadCloser, error)
	Delete(ctx context.Context, key string) error
}

// Database is the part of a SQL database the db segments use. Statements use
// PostgreSQL placeholders ($1, $2, ...).
type Database interface {
	Exec(ctx context.Context, sql string, args ...any) (rowsAffected int64, err error)
	// Query runs sql and calls scan once per row with the row's values.
	Query(ctx context.Context, sql string, scan func(values []any) error, args ...any) error
	// CopyRows bulk-inserts rows into table.
	CopyRows(ctx context.Context, table string, columns []string, rows [][]any) (int64, error)
}

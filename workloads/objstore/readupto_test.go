package objstore

import (
	"bytes"
	"io"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestReadUpTo(t *testing.T) {
	data := bytes.Repeat([]byte("0123456789"), 1000) // 10000 bytes
	tests := []struct {
		name    string
		n       int // bytes available
		limit   int
		wantLen int
		wantEOF bool
	}{
		{name: "empty", n: 0, limit: 100, wantLen: 0, wantEOF: true},
		{name: "fits", n: 99, limit: 100, wantLen: 99, wantEOF: true},
		{name: "exactly limit", n: 100, limit: 100, wantLen: 100, wantEOF: false},
		{name: "more than limit", n: 10000, limit: 4096, wantLen: 4096, wantEOF: false},
		{name: "grows past initial capacity", n: 10000, limit: 1 << 20, wantLen: 10000, wantEOF: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			buf := make([]byte, 0, 16)
			r := iotest.OneByteReader(bytes.NewReader(data[:tt.n]))
			got, err := readUpTo(r, &buf, tt.limit)
			if tt.wantEOF {
				require.ErrorIs(t, err, io.EOF)
			} else {
				require.NoError(t, err)
			}
			assert.Equal(t, data[:tt.wantLen], got)
			assert.Equal(t, len(got), len(buf), "the grown slice is stored back")
			rest, _ := io.ReadAll(r)
			assert.Len(t, rest, tt.n-tt.wantLen, "nothing beyond limit is consumed")
		})
	}
}

func TestReadUpToPropagatesErrors(t *testing.T) {
	buf := make([]byte, 0, 8)
	r := io.MultiReader(bytes.NewReader([]byte("abc")), iotest.ErrReader(io.ErrClosedPipe))
	got, err := readUpTo(r, &buf, 100)
	require.ErrorIs(t, err, io.ErrClosedPipe)
	assert.Equal(t, []byte("abc"), got)
}

package trace

import (
	"bytes"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestReadCounts(t *testing.T) {
	tests := []struct {
		name, in string
		want     []float64
		err      string // substring of the error; "" for success
	}{
		{name: "one line", in: "1 0 2 3", want: []float64{1, 0, 2, 3}},
		{name: "trailing newline", in: "4 5\n", want: []float64{4, 5}},
		{name: "mixed white space", in: " 1\t2\r\n3\n\n 4 \v5\f6", want: []float64{1, 2, 3, 4, 5, 6}},
		{name: "large", in: "9007199254740992", want: []float64{1 << 53}},
		{name: "leading zeros", in: "007", want: []float64{7}},
		{name: "letters", in: "1 2 abc", err: `t.txt:1:5: value 3: "abc" is not a non-negative integer`},
		{name: "second line", in: "1 2\n3 x4", err: `t.txt:2:3: value 4: "x4"`},
		{name: "negative", in: "1 -2", err: `t.txt:1:3: value 2: "-2"`},
		{name: "decimal", in: "1.5", err: `t.txt:1:1: value 1: "1.5"`},
		{name: "too large", in: "9007199254740993", err: `value 1: "9007199254740993" is not a non-negative integer below 2^53`},
		{name: "too long", in: "1 " + strings.Repeat("9", 100), err: "t.txt:1:3: value 2: \"9999999999999999\"... is longer than 64 bytes"},
		{name: "empty", in: "", err: "t.txt: no values"},
		{name: "only space", in: " \n\t ", err: "t.txt: no values"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, compress := range []bool{false, true} {
				in := []byte(tt.in)
				if compress {
					in = gz(t, in)
				}
				s, err := ReadCounts(bytes.NewReader(in), "t.txt")
				if tt.err != "" {
					require.Error(t, err)
					assert.Contains(t, err.Error(), tt.err)
					continue
				}
				require.NoError(t, err)
				assert.Equal(t, tt.want, s.Values)
				assert.Equal(t, time.Second, s.Step)
				assert.Equal(t, "t.txt", s.Name)
			}
		})
	}
}

func TestReadCountsGzipErrors(t *testing.T) {
	full := gz(t, []byte(strings.Repeat("1 2 3 ", 1000)))
	t.Run("truncated stream", func(t *testing.T) {
		_, err := ReadCounts(bytes.NewReader(full[:len(full)-10]), "cut.gz")
		require.Error(t, err)
		assert.Contains(t, err.Error(), "cut.gz:1: read: gzip:")
	})
	t.Run("bad header", func(t *testing.T) {
		_, err := ReadCounts(bytes.NewReader([]byte{0x1f, 0x8b, 0, 0}), "bad.gz")
		require.Error(t, err)
		assert.Contains(t, err.Error(), "bad.gz: gzip:")
	})
	t.Run("read error", func(t *testing.T) {
		_, err := ReadCounts(iotest.TimeoutReader(iotest.OneByteReader(strings.NewReader("1 2 3"))), "slow.txt")
		require.Error(t, err)
		assert.Contains(t, err.Error(), "slow.txt:")
	})
}

func BenchmarkReadCounts(b *testing.B) {
	var sb strings.Builder
	for i := range 1_000_000 {
		sb.WriteString([]string{"0 ", "1 ", "12 ", "3 "}[i%4])
	}
	for _, c := range []struct {
		name string
		data []byte
	}{{"plain", []byte(sb.String())}, {"gzip", gz(b, []byte(sb.String()))}} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(sb.Len()))
			for b.Loop() {
				if _, err := ReadCounts(bytes.NewReader(c.data), c.name); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

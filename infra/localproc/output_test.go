package localproc

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestFreePortAndAddr(t *testing.T) {
	port, err := FreePort()
	require.NoError(t, err)
	l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
	require.NoError(t, err, "the port is free")
	require.NoError(t, l.Close())

	addr, err := FreeLoopbackAddr()
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(addr, "127.0.0.1:"), addr)
	l, err = net.Listen("tcp", addr)
	require.NoError(t, err, "the address is free")
	require.NoError(t, l.Close())
}

func TestTail(t *testing.T) {
	for _, tc := range []struct {
		name   string
		max    int
		writes []string
		want   string
	}{
		{"within max", 10, []string{"ab", "cd"}, "abcd"},
		{"trimmed", 5, []string{"ab", "cdef", "gh"}, "defgh"},
		{"one large write", 3, []string{"abcdefgh"}, "fgh"},
		{"zero max", 0, []string{"ab"}, ""},
		{"negative max", -1, []string{"ab"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tl := &Tail{Max: tc.max}
			for _, s := range tc.writes {
				n, err := tl.Write([]byte(s))
				require.NoError(t, err)
				assert.Equal(t, len(s), n)
			}
			assert.Equal(t, tc.want, tl.String())
		})
	}
}

func TestFileTail(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log")
	require.NoError(t, os.WriteFile(path, []byte("0123456789"), 0o644))
	for _, tc := range []struct {
		max, from int64
		want      string
	}{
		{4, 0, "6789"},
		{100, 0, "0123456789"},
		{100, 7, "789"},
		{2, 7, "89"},
		{100, 10, ""},
	} {
		assert.Equal(t, tc.want, FileTail(path, tc.max, tc.from), "%+v", tc)
	}
	assert.Contains(t, FileTail(filepath.Join(t.TempDir(), "none"), 4, 0), "(no log:")
}

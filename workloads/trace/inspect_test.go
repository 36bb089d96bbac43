package trace

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// countsFile writes two days of a synthetic trace as a per-second counts
// file and returns its path and the series.
func countsFile(t *testing.T, seed uint64) (string, Series) {
	t.Helper()
	s, err := Generate(Synthetic(5), time.Second, 48*time.Hour, seed)
	require.NoError(t, err)
	var b strings.Builder
	for _, v := range s.Values {
		b.WriteString(strconv.FormatFloat(v, 'f', 0, 64))
		b.WriteByte('\n')
	}
	return writeFile(t, "t"+strconv.FormatUint(seed, 10)+".txt", gz(t, []byte(b.String()))), s
}

func TestWriteStats(t *testing.T) {
	p1, s1 := countsFile(t, 1)
	p2, s2 := countsFile(t, 2)
	var got, want bytes.Buffer
	require.NoError(t, WriteStats(&got, Files{BinStep: time.Second}, p1, p2))
	d1, d2 := Describe(s1), Describe(s2)
	d1.Name, d2.Name = "t1.txt", "t2.txt"
	require.NoError(t, WriteStatsTable(&want, d1, d2))
	assert.Equal(t, want.String(), got.String())

	require.NoError(t, WriteStats(&got, Files{Format: "counts", BinStep: time.Second}, p1))
	assert.ErrorContains(t, WriteStats(&got, Files{Format: "bogus"}, p1), "bogus")
	assert.ErrorContains(t, WriteStats(&got, Files{}, p1+".missing"), "missing")
}

func TestWriteFit(t *testing.T) {
	path, _ := countsFile(t, 3)
	var out bytes.Buffer
	require.NoError(t, WriteFit(&out, Files{BinStep: time.Second}, path, 7))
	table, js, ok := strings.Cut(out.String(), "\nfitted parameters:\n")
	require.True(t, ok, out.String())
	assert.Contains(t, table, "requests")
	var p Params
	require.NoError(t, json.Unmarshal([]byte(js), &p))
	observed, err := Files{}.Load(path)
	require.NoError(t, err)
	want, err := Fit(observed)
	require.NoError(t, err)
	assert.Equal(t, want, p)

	var again bytes.Buffer
	require.NoError(t, WriteFit(&again, Files{}, path, 7))
	assert.Equal(t, out.String(), again.String(), "same seed, same output")
}

package extending_test

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aware-autoscaler/aware/evaluation/study/lab"
	"github.com/aware-autoscaler/aware/evaluation/study/lab/labtest"
	"github.com/aware-autoscaler/aware/workloads/trace"
)

// minuteCSV is a trace format of our own: a "minute,requests" header and
// one line per minute with the requests that arrived in it.
var minuteCSV = trace.RegisterFormat(trace.FormatSpec{
	Name:   "minute-csv",
	Detect: func(first string) bool { return first == "minute,requests" },
	Read: func(r io.Reader, name string, _ time.Duration) (trace.Series, error) {
		s := trace.Series{Name: name, Step: time.Minute}
		sc := bufio.NewScanner(r)
		for line := 1; sc.Scan(); line++ {
			if line == 1 {
				continue
			}
			minute, count, ok := strings.Cut(sc.Text(), ",")
			m, err1 := strconv.Atoi(minute)
			v, err2 := strconv.ParseFloat(count, 64)
			if !ok || err1 != nil || err2 != nil || m != len(s.Values) || v < 0 {
				return trace.Series{}, fmt.Errorf("%s:%d: want \"minute,requests\" with minute %d and a count not negative, got %q", name, line, len(s.Values), sc.Text())
			}
			s.Values = append(s.Values, v)
		}
		if err := sc.Err(); err != nil {
			return trace.Series{}, fmt.Errorf("%s: %w", name, err)
		}
		if len(s.Values) == 0 {
			return trace.Series{}, fmt.Errorf("%s: no minutes after the header", name)
		}
		return s, nil
	},
})

// TestTraceFormatFromOutside: a file in the registered format is detected
// and loaded, its name parses, a bad line is reported with its file and
// line, and a study's lab (`aware study --trace FILE`) drives every
// application with it.
func TestTraceFormatFromOutside(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString("minute,requests\n")
	for m := range 24 * 60 {
		fmt.Fprintf(&b, "%d,%d\n", m, 100+50*(m/60%3))
	}
	path := filepath.Join(dir, "campaign.csv")
	require.NoError(t, os.WriteFile(path, []byte(b.String()), 0o644))

	s, err := trace.Load(path)
	require.NoError(t, err)
	assert.Equal(t, time.Minute, s.Step)
	assert.Equal(t, 24*60, s.Len())
	f, err := trace.ParseFormat("minute-csv")
	require.NoError(t, err)
	assert.Equal(t, minuteCSV, f)
	assert.Equal(t, "minute-csv", f.String())

	bad := filepath.Join(dir, "bad.csv")
	require.NoError(t, os.WriteFile(bad, []byte("minute,requests\n0,10\n1,x\n"), 0o644))
	_, err = trace.Load(bad)
	assert.ErrorContains(t, err, `bad.csv:3: want "minute,requests" with minute 1`)

	l := labtest.New(t, func(c *lab.Config) { c.Trace = path })
	for _, origin := range l.Traces() {
		assert.Contains(t, origin, "file: campaign.csv")
	}
	env, err := l.Env(l.Split("test")[0], 0)
	require.NoError(t, err)
	shape := env.Cluster().App(0).Load.Shape
	assert.Len(t, shape, 24*60*2, "a day of 30 s steps")
}

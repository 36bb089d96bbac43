package speed

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCasesRun(t *testing.T) {
	for _, c := range Cases() {
		op, err := c.Setup()
		require.NoError(t, err, c.Name)
		if !strings.HasPrefix(c.Name, "BiGRU") { // seconds each; controller/rl tests the BiGRU
			op()
		}
	}
}

func TestMeasureAndTable(t *testing.T) {
	n := 0
	rows, err := Measure([]Case{{Name: "count", Target: time.Second, FIRM: time.Millisecond, Setup: func() (func(), error) {
		return func() { n++ }, nil
	}}})
	require.NoError(t, err)
	require.Len(t, rows, 1)
	assert.Positive(t, n)
	assert.Less(t, rows[0].PerOp, time.Millisecond)
	var b bytes.Buffer
	require.NoError(t, WriteTable(&b, []Row{
		{Name: "update", PerOp: 400 * time.Microsecond, Target: 200 * time.Microsecond, FIRM: FIRMUpdate},
		{Name: "act", PerOp: 650 * time.Nanosecond, Target: 5 * time.Microsecond, FIRM: FIRMInference},
		{Name: "gru", PerOp: 765 * time.Millisecond},
	}))
	assert.Contains(t, b.String(), "| update | 400µs | 0 | ≤ 200µs | no (2.0× over) | 73ms | 182× |")
	assert.Contains(t, b.String(), "| act | 650ns | 0 | ≤ 5µs | yes | 1.2ms | 1846× |")
	assert.Contains(t, b.String(), "| gru | 765ms | 0 | – | – | – | – |")

	_, err = Measure([]Case{{Name: "broken", Setup: func() (func(), error) { return nil, errors.New("no") }}})
	assert.ErrorContains(t, err, "speed: broken: no")
}

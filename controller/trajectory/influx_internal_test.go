package trajectory

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRowsToStepsLeavesOutPointsBeingWritten: InfluxDB stores each field
// apart, so a read concurrent with a write can see the newest point with
// some fields missing (seen at 1000 MPAs: `column "t": <nil>`). Such rows
// at a series' end are left out; before a whole row they are an error.
func TestRowsToStepsLeavesOutPointsBeingWritten(t *testing.T) {
	cols := []string{"time", "adim", "a0", "done", "ep_reward", "ep_start", "episode", "reward", "s0", "sdim", "stage", "t"}
	n := func(s string) json.Number { return json.Number(s) }
	whole := func(ts, step string) []any {
		return []any{n(ts), n("1"), n("0.5"), false, n("1"), n("1000"), n("0"), n("0.25"), n("0.1"), n("1"), "Offline", n(step)}
	}
	partial := func(ts string) []any {
		v := whole(ts, "9")
		v[11], v[1] = nil, nil // "t" and "adim" not visible yet
		return v
	}
	s := &InfluxStore{c: &influxClient{base: "http://influx"}}
	steps, err := s.rowsToSteps("ns/app", []querySeries{{Columns: cols, Values: [][]any{whole("1000", "0"), whole("2000", "1"), partial("3000"), partial("4000")}}})
	require.NoError(t, err)
	require.Len(t, steps, 2, "the two points being written are left out")
	assert.Equal(t, 1, steps[1].T)
	assert.Equal(t, []float64{0.1}, steps[1].State)

	_, err = s.rowsToSteps("ns/app", []querySeries{{Columns: cols, Values: [][]any{whole("1000", "0"), partial("2000"), whole("3000", "2")}}})
	assert.ErrorContains(t, err, `column "t": <nil>`, "a row lacking fields before a whole one")

	bad := whole("1000", "0")
	bad[11] = "zero"
	_, err = s.rowsToSteps("ns/app", []querySeries{{Columns: cols, Values: [][]any{bad}}})
	assert.ErrorContains(t, err, `column "t": zero (string) is not an integer`, "a wrong value is not a missing one")
}

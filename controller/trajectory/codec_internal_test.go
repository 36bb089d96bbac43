package trajectory

import (
	"errors"
	"fmt"
	"math"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func testStep() Step {
	return Step{App: "ns/a b,c=d", Episode: 7, T: 3, Time: time.Unix(0, 1_700_000_000_123_456_789).UTC(),
		State: []float64{1.0 / 3, -2.5e-300, 0, math.MaxFloat64}, Action: []float64{3, 0.25, 536870912},
		Reward: -0.1, Done: true, Stage: `say "hi" \ ok`}
}

func TestRecordRoundTrip(t *testing.T) {
	s := testStep()
	t.Run("stored", func(t *testing.T) {
		buf := appendStoredStep(nil, &s, loc{seg: 4, off: 123456, size: 99})
		assert.LessOrEqual(t, len(buf), maxRecordSize(&s))
		payload, err := checkFrame(buf)
		require.NoError(t, err)
		var r record
		require.NoError(t, decodeRecord(payload, recStep, &r))
		assert.Equal(t, s, r.step)
		assert.Equal(t, loc{seg: 4, off: 123456, size: 99}, r.prev)
		// Every cut of the payload is an error, never a panic.
		for n := range len(payload) {
			var r record
			assert.ErrorIs(t, decodeRecord(payload[:n], recStep, &r), ErrCorrupt, "cut at %d", n)
		}
		assert.ErrorIs(t, decodeRecord(payload, recSpool, &r), ErrCorrupt, "wrong type")
		buf[len(buf)-1] ^= 1
		_, err = checkFrame(buf)
		assert.ErrorIs(t, err, ErrCorrupt)
	})
	t.Run("spooled", func(t *testing.T) {
		sp := spooled{Step: s, epReward: 12.5, epStart: -5}
		buf := appendSpooledStep(nil, &sp)
		payload, err := checkFrame(buf)
		require.NoError(t, err)
		var r record
		require.NoError(t, decodeRecord(payload, recSpool, &r))
		assert.Equal(t, s, r.step)
		assert.Equal(t, 12.5, r.epReward)
		assert.Equal(t, int64(-5), r.epStart)
	})
}

func TestLineProtocol(t *testing.T) {
	s := spooled{Step: testStep(), epReward: 4.75, epStart: 1_699_999_999_000_000_000}
	got := string(appendLines(nil, &s))
	want := `steps,app=ns/a\ b\,c\=d episode=7i,t=3i,reward=-0.1,done=true,stage="say \"hi\" \\ ok",` +
		`ep_reward=4.75,ep_start=1699999999000000000i,sdim=4i,adim=3i,` +
		`s0=0.3333333333333333,s1=-2.5e-300,s2=0,s3=1.7976931348623157e+308,a0=3,a1=0.25,a2=5.36870912e+08 1700000000123456789` + "\n" +
		`episodes,app=ns/a\ b\,c\=d episode=7i,reward=4.75,steps=4i,start=1699999999000000000i 1700000000123456789` + "\n"
	assert.Equal(t, want, got)
	s.Done = false
	assert.NotContains(t, string(appendLines(nil, &s)), "episodes,")
}

func TestInfluxQLQuoting(t *testing.T) {
	assert.Equal(t, `'ns/it\'s \\ x\n'`, quoteString("ns/it's \\ x\n"))
	assert.Equal(t, `"my \"db\""`, quoteIdent(`my "db"`))
}

func TestRetryable(t *testing.T) {
	tests := []struct {
		err  error
		want bool
	}{
		{fmt.Errorf("dial: %w", errors.New("connection refused")), true},
		{&statusError{status: http.StatusServiceUnavailable}, true},
		{&statusError{status: http.StatusInternalServerError}, true},
		{&statusError{status: http.StatusNotFound, msg: "database not found"}, true},
		{&statusError{status: http.StatusUnauthorized}, true},
		{&statusError{status: http.StatusTooManyRequests}, true},
		{&statusError{status: http.StatusBadRequest, msg: "partial write"}, false},
		{&statusError{status: http.StatusRequestEntityTooLarge}, false},
		{&statementError{"retention policy duration must be at least 1h0m0s"}, false},
	}
	for _, tc := range tests {
		assert.Equal(t, tc.want, retryable(fmt.Errorf("wrapped: %w", tc.err)), "%v", tc.err)
	}
}

func TestTopTieBreak(t *testing.T) {
	eps := []entry[struct{}]{
		{meta: meta{episode: 1, reward: 5, done: true}},
		{meta: meta{episode: 2, reward: 9, done: true}},
		{meta: meta{episode: 3, reward: 9, done: false}},
		{meta: meta{episode: 4, reward: 9, done: true}},
		{meta: meta{episode: 5, reward: -1, done: true}},
	}
	assert.Equal(t, []int{3, 1, 0}, topDone(eps, 3))
	assert.Equal(t, []int{1, 3, 4}, recentDone(eps, 3))
	assert.Empty(t, topDone(eps, 0))
}

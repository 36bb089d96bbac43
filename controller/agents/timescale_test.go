package agents

import (
	"context"
	"io"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/aware-autoscaler/aware/controller/autoscaler"
	"github.com/aware-autoscaler/aware/controller/trajectory"
	"github.com/aware-autoscaler/aware/gym"
)

// noObjects is a bucket that holds nothing.
type noObjects struct{}

func (noObjects) Put(context.Context, string, io.Reader, int64) error { return nil }
func (noObjects) Get(context.Context, string) (io.ReadCloser, error) {
	return nil, io.ErrUnexpectedEOF
}

// TestTimeScaleDividesSimulatedIntervals: the OFFLINE checkpoint and
// bucket-copy intervals are simulated time, run on the wall clock divided
// by the time scale; nonsense scales are refused, naming the setting.
func TestTimeScaleDividesSimulatedIntervals(t *testing.T) {
	obs := autoscaler.ObserverFunc(func(context.Context, autoscaler.Query) (gym.Metrics, error) { return gym.Metrics{}, nil })
	newRunner := func(opts ...Option) (*Runner, error) {
		return New(fake.NewClientBuilder().Build(), obs, trajectory.NewMemory(), t.TempDir(), opts...)
	}
	tests := []struct {
		name            string
		opts            []Option
		offline, upload time.Duration // wall time
	}{
		{"real cluster", []Option{WithObjects(noObjects{}, "p", 0)}, DefaultOfflineCheckpoints, 5 * time.Minute},
		{"twin at 10x", []Option{WithTimeScale(10), WithObjects(noObjects{}, "p", 0)}, 12 * time.Second, 30 * time.Second},
		{"option order does not matter", []Option{WithObjects(noObjects{}, "p", 20*time.Minute), WithOfflineCheckpoints(time.Minute), WithTimeScale(4)},
			15 * time.Second, 5 * time.Minute},
		{"every round stays every round", []Option{WithTimeScale(7), WithOfflineCheckpoints(0)}, 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := newRunner(append([]Option{WithStep(time.Second)}, tc.opts...)...)
			require.NoError(t, err)
			assert.Equal(t, tc.offline, r.cfg.offlineEvery)
			if tc.upload > 0 {
				require.NotNil(t, r.cfg.remote)
				assert.Equal(t, tc.upload, r.cfg.remote.every)
			}
		})
	}
	for _, k := range []float64{0, 0.5, math.NaN(), math.Inf(1)} {
		_, err := newRunner(WithTimeScale(k))
		assert.ErrorContains(t, err, "time scale", "%g", k)
	}
}

package train

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestEach(t *testing.T) {
	var ran atomic.Int64
	seen := make([]bool, 20)
	require.NoError(t, Each(context.Background(), 20, 3, func(i int) error {
		ran.Add(1)
		seen[i] = true
		return nil
	}))
	assert.EqualValues(t, 20, ran.Load())
	assert.NotContains(t, seen, false, "every index ran once")

	// Several fail: the lowest index's error, whichever worker finished first.
	for range 5 {
		err := Each(context.Background(), 10, 4, func(i int) error {
			if i%3 == 2 {
				return fmt.Errorf("index %d", i)
			}
			return nil
		})
		assert.EqualError(t, err, "index 2")
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := Each(ctx, 5, 2, func(int) error { t.Error("ran after cancellation"); return nil })
	assert.True(t, errors.Is(err, context.Canceled))
	assert.NoError(t, Each(context.Background(), 0, 2, func(int) error { return errors.New("never") }))
}

package bootstrap

import (
	"context"
	"errors"
	"fmt"

	"github.com/aware-autoscaler/aware/controller/rl/agent"
)

// Offline trains ag on data alone, as the OFFLINE stage does: every
// transition goes into its memory, then it runs updates training updates
// (checking ctx between them); progress, when set, sees every update's
// statistics. It returns the last update's.
func Offline(ctx context.Context, ag agent.Agent, data []agent.Transition, updates int, progress func(i int, st agent.Stats)) (agent.Stats, error) {
	if len(data) == 0 {
		return agent.Stats{}, errors.New("bootstrap: Offline: no recorded transitions")
	}
	if updates < 1 {
		return agent.Stats{}, fmt.Errorf("bootstrap: Offline: %d updates must be positive", updates)
	}
	for _, t := range data {
		ag.Observe(t)
	}
	var st agent.Stats
	for i := range updates {
		if i%64 == 0 {
			if err := ctx.Err(); err != nil {
				return st, err
			}
		}
		var err error
		if st, err = ag.Update(); err != nil {
			return st, fmt.Errorf("bootstrap: Offline: update %d: %w", i, err)
		}
		if !st.Updated {
			return st, fmt.Errorf("bootstrap: Offline: %d recorded transitions are too few for one update", len(data))
		}
		if progress != nil {
			progress(i, st)
		}
	}
	return st, nil
}

package trajectory_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/aware-autoscaler/aware/controller/trajectory"
)

// The controller appends each RL step as it ends; the lifecycle reads the
// last episodes' rewards and the meta learner the best trajectories.
func ExampleOpenFile() {
	dir, err := os.MkdirTemp("", "trajectories")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	store, err := trajectory.OpenFile(dir)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer store.Close()

	ctx := context.Background()
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for ep := range int64(3) {
		for t := range 5 {
			err := store.Append(ctx, trajectory.Step{
				App: "default/shop", Episode: ep, T: t, Time: start.Add(time.Duration(int(ep)*5+t) * 30 * time.Second),
				State:  []float64{0.5, 0.7, 1.0, 1.1},
				Action: []float64{2, 0.5, 512 << 20},
				Reward: float64(ep+1) * 0.5, Done: t == 4, Stage: "ONLINE",
			})
			if err != nil {
				fmt.Println(err)
				return
			}
		}
		if err := store.Flush(ctx); err != nil {
			fmt.Println(err)
			return
		}
	}
	recent, _ := store.RecentEpisodes(ctx, "default/shop", 2)
	for _, e := range recent {
		fmt.Printf("episode %d: %d steps, reward %.1f\n", e.Episode, e.Steps, e.Reward)
	}
	top, _ := store.Top(ctx, "default/shop", 1)
	fmt.Printf("best: episode %d, first action %v\n", top[0].Episode.Episode, top[0].Steps[0].Action)
	// Output:
	// episode 1: 5 steps, reward 5.0
	// episode 2: 5 steps, reward 7.5
	// best: episode 2, first action [2 0.5 5.36870912e+08]
}

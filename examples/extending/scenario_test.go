package extending_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aware-autoscaler/aware/evaluation/study/lab"
	"github.com/aware-autoscaler/aware/evaluation/study/lab/labtest"
	"github.com/aware-autoscaler/aware/evaluation/study/serving"
	"github.com/aware-autoscaler/aware/generator"
	"github.com/aware-autoscaler/aware/workloads/segments"
	"github.com/aware-autoscaler/aware/workloads/sim"
)

// imageBurst is an instability scenario of our own: a campaign doubles the
// load and its users upload images four times the side (the built-in
// image-size change, whose sizes the profile has entries for).
var imageBurst = sim.RegisterScenario(sim.ScenarioSpec{
	Name:       "image-burst",
	Chain:      func(chain []segments.Spec) []segments.Spec { return sim.ImageSize.Apply(chain) },
	LoadFactor: 2,
})

// TestScenarioFromOutside: the registered scenario is parsed by name and
// listed after the paper's, changes an application's model and load in
// the simulator, and the serving study runs it.
func TestScenarioFromOutside(t *testing.T) {
	s, err := sim.ParseScenario("image-burst")
	require.NoError(t, err)
	assert.Equal(t, imageBurst, s)
	all := sim.Scenarios()
	assert.Equal(t, imageBurst, all[len(all)-1])
	assert.True(t, imageBurst.ChangesLoad())
	assert.Contains(t, lab.ScenarioNames(), "image-burst")

	l := labtest.New(t)
	c := serving.Config{Apps: 1, Scenarios: []string{"image-burst"}, Converged: 3, Before: 2, After: 2, Window: 2, ServingTolerance: 0.1, VarianceTolerance: 0.1, Seed: 1}
	require.NoError(t, c.Validate())
	units, err := c.Draw(l)
	require.NoError(t, err)
	require.Len(t, units, 1)
	_, app, err := l.App(units[0].App)
	require.NoError(t, err)
	affected, err := l.Affects(units[0].App, imageBurst)
	require.NoError(t, err)
	assert.True(t, affected, "a scenario that changes the load affects every application")

	env, err := l.Env(units[0].App, imageBurst)
	require.NoError(t, err)
	assert.Equal(t, 2*app.Load.Scale, env.Cluster().App(0).Load.Scale)
	assert.Equal(t, imageBurst.Apply(app.Chain), env.Cluster().App(0).Chain)

	r := &serving.Runner{Lab: l, Policies: labtest.Policies(t, l), Config: c}
	for _, cell := range serving.Plan(c, units) {
		run, err := r.Cell(context.Background(), cell)
		require.NoError(t, err, cell.Key())
		assert.Len(t, run.Rewards, 4)
	}
	_, err = l.DrawAffected(generator.SplitTest, imageBurst, 2, nil)
	assert.Error(t, err, "a nil source is refused, not a panic")
}

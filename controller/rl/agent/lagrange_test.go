package agent_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/aware-autoscaler/aware/controller/rl/agent"
)

func TestLagrangian(t *testing.T) {
	l := agent.Lagrangian{Budget: 0.05, LR: 2, Max: 3}
	assert.NoError(t, l.Validate())
	for _, tc := range []struct {
		name         string
		lambda, cost float64
		want         float64
	}{
		{"over budget: rises", 0, 0.25, 0.4},
		{"at budget: stays", 1.5, 0.05, 1.5},
		{"slack: falls", 1, 0, 0.9},
		{"never below 0", 0.05, 0, 0},
		{"never above Max", 2.9, 1, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.InDelta(t, tc.want, l.Update(tc.lambda, tc.cost), 1e-12)
		})
	}
	assert.Equal(t, 7.0, agent.Shape(10, 1.5, 2))
	for _, bad := range []agent.Lagrangian{{Budget: -1, LR: 1, Max: 1}, {LR: 0, Max: 1}, {LR: 1, Max: math.Inf(1)}, {LR: math.NaN(), Max: 1}} {
		assert.Error(t, bad.Validate(), "%+v", bad)
	}
}

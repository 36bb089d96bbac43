package study

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Cell is one unit of a study: an arm (AWARE, TL, rule-based, …) run on
// one application with one seed, optionally under a scenario and within a
// numbered A/B test. A cell's result depends on its fields only.
type Cell struct {
	Arm      string `json:"arm"`
	App      string `json:"app"`
	Seed     uint64 `json:"seed"`
	Scenario string `json:"scenario,omitempty"`
	Test     int    `json:"test,omitempty"`
}

var keyPart = regexp.MustCompile(`^[A-Za-z0-9._+-]*$`)

// Key names the cell uniquely within its study (and its result file):
// test-arm-app-scenario-seed, with the empty parts left out.
func (c Cell) Key() string {
	parts := []string{}
	if c.Test > 0 {
		parts = append(parts, fmt.Sprintf("t%03d", c.Test))
	}
	parts = append(parts, c.Arm, c.App)
	if c.Scenario != "" {
		parts = append(parts, c.Scenario)
	}
	return strings.Join(append(parts, "s"+strconv.FormatUint(c.Seed, 10)), "_")
}

// validate refuses cells whose key would be ambiguous or not a file name.
func (c Cell) validate() error {
	for name, v := range map[string]string{"arm": c.Arm, "app": c.App, "scenario": c.Scenario} {
		if !keyPart.MatchString(v) {
			return fmt.Errorf("cell %s %q: only letters, digits, '.', '+' and '-'", name, v)
		}
	}
	if c.Arm == "" || c.App == "" {
		return fmt.Errorf("cell %+v: arm and app are required", c)
	}
	if c.Test < 0 {
		return fmt.Errorf("cell %+v: test %d is negative", c, c.Test)
	}
	return nil
}

// Plan is a study's cells in a fixed order.
type Plan []Cell

// Apps are the applications of p's cells, each once, in plan order.
func (p Plan) Apps() []string {
	seen := map[string]bool{}
	var out []string
	for _, c := range p {
		if !seen[c.App] {
			seen[c.App] = true
			out = append(out, c.App)
		}
	}
	return out
}

// Validate refuses invalid cells and two cells with the same key.
func (p Plan) Validate() error {
	seen := make(map[string]int, len(p))
	var errs []error
	for i, c := range p {
		if err := c.validate(); err != nil {
			errs = append(errs, fmt.Errorf("cell %d: %w", i, err))
			continue
		}
		if j, ok := seen[c.Key()]; ok {
			errs = append(errs, fmt.Errorf("cells %d and %d are both %s", j, i, c.Key()))
		}
		seen[c.Key()] = i
	}
	return errors.Join(errs...)
}

// ShardSpec is one of N shards of a plan: the Index-th, from 1.
type ShardSpec struct{ Index, Of int }

// All is the whole plan as one shard.
var All = ShardSpec{1, 1}

// ParseShard reads "i/n" (1 ≤ i ≤ n).
func ParseShard(s string) (ShardSpec, error) {
	a, b, ok := strings.Cut(s, "/")
	i, err1 := strconv.Atoi(a)
	n, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil || n < 1 || i < 1 || i > n {
		return ShardSpec{}, fmt.Errorf("shard %q: want i/n with 1 ≤ i ≤ n, e.g. 2/4", s)
	}
	return ShardSpec{i, n}, nil
}

func (s ShardSpec) String() string { return fmt.Sprintf("%d/%d", s.Index, s.Of) }

// Shard is the shard's share of the plan: every Of-th cell from the
// Index-th, so that shards are balanced when the plan interleaves arms and
// apps, and together hold each cell exactly once.
func (p Plan) Shard(s ShardSpec) Plan {
	var out Plan
	for i := s.Index - 1; i < len(p); i += s.Of {
		out = append(out, p[i])
	}
	return out
}

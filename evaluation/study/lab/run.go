package lab

import (
	"context"
	"io"

	"github.com/aware-autoscaler/aware/evaluation/study"
	"github.com/aware-autoscaler/aware/evaluation/testbedrun"
)

// Run is how a study runs: in which lab, with which shared policies,
// into which folder, which shard, on how many workers.
type Run struct {
	Lab      *Lab
	Policies *Policies
	// Dir holds the study's store, results.json, report.md and plots.
	Dir     string
	Shard   study.ShardSpec
	Workers int
	// Progress, when set, receives progress lines.
	Progress  io.Writer
	Bootstrap study.Bootstrap
	// Meta is recorded in results.json.
	Meta study.Meta
	// RenderOnly reports what Dir holds (after merging shards) instead of
	// running cells.
	RenderOnly bool
	// Testbed, when set, is the running testbed the studies that run on
	// one (their Config's Testbed) run their testbed cells on.
	Testbed *testbedrun.Bed
}

// Execute runs a study in r: its cells not done yet, then its report.
// The configuration recorded with the cells is the lab's, where its load
// shapes came from (Lab.Traces: a folder whose files are absent gives
// other shapes) and cfg, so that cells of another load are refused, not
// resumed; seed is recorded among the seeds of results.json.
func Execute[R any](ctx context.Context, r Run, name string, cfg any, seed uint64, plan study.Plan,
	cell func(context.Context, study.Cell) (R, error), render func(dir string, results []R) (study.Report, error)) (study.Report, error) {
	r.Meta.Seeds = append(r.Meta.Seeds, seed)
	spec := study.Spec[R]{Name: name, Dir: r.Dir, Config: struct {
		Lab   Config
		Load  []string
		Study any
	}{r.Lab.Config(), r.Lab.Traces(), cfg}, Plan: plan, Shard: r.Shard, Workers: r.Workers, Progress: r.Progress, Cell: cell, Meta: r.Meta, Render: render}
	if r.RenderOnly {
		spec.Cell = nil
	}
	return study.Execute(ctx, spec)
}

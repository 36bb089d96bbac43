package main

import (
	"github.com/spf13/pflag"

	"github.com/aware-autoscaler/aware/generator"
	"github.com/aware-autoscaler/aware/gym"
)

// mappingValue is a gym.Mapping as a flag value.
type mappingValue struct{ m *gym.Mapping }

func (v mappingValue) String() string { return v.m.String() }
func (v mappingValue) Type() string   { return "mapping" }

func (v mappingValue) Set(s string) error {
	m, err := gym.ParseMapping(s)
	if err != nil {
		return err
	}
	*v.m = m
	return nil
}

// actionsFlag registers --actions, how an agent's continuous actions become
// allocations.
func actionsFlag(f *pflag.FlagSet, m *gym.Mapping) {
	f.Var(mappingValue{m}, "actions", "how continuous actions become allocations: relative (scale what runs by up to 2× a step, 0 keeps it) or absolute (the bounds' box, as the paper's agents)")
}

// tracesFlag registers --traces, the folder of the real traces
// (generator.TracesDir by default).
func tracesFlag(f *pflag.FlagSet, dir *string) {
	if *dir == "" {
		*dir = generator.TracesDir
	}
	f.StringVar(dir, "traces", *dir, generator.TracesHelp)
}

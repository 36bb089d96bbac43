// Package labtest holds what the studies' tests share: a small lab that
// is the same on every machine and golden files with an -update flag.
package labtest

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/aware-autoscaler/aware/evaluation/study/lab"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// Config is a 60-application pool on synthetic shapes (the same on every
// machine, with or without ../shared/traces) whose HPA targets are
// searched over 2 hours instead of a day.
func Config() lab.Config {
	cfg := lab.DefaultConfig()
	cfg.PoolSize, cfg.Traces = 60, ""
	cfg.Tune.Steps, cfg.Tune.Warmup = 240, 20
	return cfg
}

// New is Config's lab, changed by mod.
func New(t testing.TB, mod ...func(*lab.Config)) *lab.Lab {
	t.Helper()
	cfg := Config()
	for _, m := range mod {
		m(&cfg)
	}
	l, err := lab.New(cfg)
	require.NoError(t, err)
	return l
}

// Policies is a policy folder for l in a temporary directory.
func Policies(t testing.TB, l *lab.Lab) *lab.Policies {
	t.Helper()
	p, err := lab.OpenPolicies(t.TempDir(), l)
	require.NoError(t, err)
	return p
}

// Golden compares got with testdata/name, rewriting it under -update.
func Golden(t testing.TB, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		require.NoError(t, os.MkdirAll("testdata", 0o755))
		require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "go test -update writes it")
	assert.Equal(t, string(want), got)
}

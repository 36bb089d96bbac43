package main

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRootListsSubcommands(t *testing.T) {
	root := newRootCmd()
	var buf bytes.Buffer
	root.SetOut(&buf)
	root.SetArgs([]string{"--help"})
	require.NoError(t, root.Execute())
	for _, sub := range []string{"run", "workload", "loadgen"} {
		assert.Contains(t, buf.String(), sub)
	}
}

// Every group command refuses an unknown subcommand (a non-zero exit);
// a group with no run of its own prints its help when given none.
func TestUnknownSubcommandsAreRefused(t *testing.T) {
	var groups [][]string
	var walk func(c *cobra.Command, path []string)
	walk = func(c *cobra.Command, path []string) {
		for _, sub := range c.Commands() {
			if sub.HasSubCommands() {
				p := append(append([]string(nil), path...), sub.Name())
				groups = append(groups, p)
				walk(sub, p)
			}
		}
	}
	walk(newRootCmd(), nil)
	require.GreaterOrEqual(t, len(groups), 8, "the group commands were found")
	for _, p := range groups {
		t.Run(strings.Join(p, " "), func(t *testing.T) {
			r := newRootCmd()
			var out bytes.Buffer
			r.SetOut(&out)
			r.SetErr(&out)
			r.SetArgs(append(p, "no-such-subcommand"))
			assert.ErrorContains(t, r.Execute(), `"no-such-subcommand"`, "refused, naming it")
		})
	}
	r := newRootCmd()
	var out bytes.Buffer
	r.SetOut(&out)
	r.SetArgs([]string{"sim"})
	require.NoError(t, r.Execute())
	assert.Contains(t, out.String(), "Available Commands")
}

// TestAgentsRefusesBadFlags: `aware agents` names each bad flag before it
// connects to anything.
func TestAgentsRefusesBadFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--trainers", "0"}, "--trainers 0"},
		{[]string{"--memory-limit", "lots"}, `--memory-limit "lots"`},
		{[]string{"--memory-limit", "-1Mi"}, `--memory-limit "-1Mi"`},
		{[]string{"--replay", "0"}, "--replay 0"},
		{[]string{"--offline-checkpoint-every", "-1s"}, "--offline-checkpoint-every -1s"},
		{[]string{"--time-scale", "NaN"}, "--time-scale NaN"},
		{[]string{"--snapshots-from", "aware-controller:8080"}, `--snapshots-from "aware-controller:8080"`},
	} {
		cmd := newAgentsCmd()
		cmd.SetArgs(tc.args)
		cmd.SetOut(&bytes.Buffer{})
		cmd.SetErr(&bytes.Buffer{})
		assert.ErrorContains(t, cmd.Execute(), tc.want, "%v", tc.args)
	}
}

// TestControllerRefusesBadFlags: `aware controller` names each bad flag
// before it connects to anything.
func TestControllerRefusesBadFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--vpa-recommender-interval", "-1m"}, "--vpa-recommender-interval -1m0s"},
		{[]string{"--webhook-failure-policy", "Maybe"}, `--webhook-failure-policy: "Maybe"`},
		{[]string{"--time-scale", "0.5"}, "--time-scale 0.5"},
		{[]string{"--time-scale", "+Inf"}, "--time-scale +Inf"},
	} {
		cmd := newControllerCmd()
		cmd.SetArgs(tc.args)
		cmd.SetOut(&bytes.Buffer{})
		cmd.SetErr(&bytes.Buffer{})
		assert.ErrorContains(t, cmd.Execute(), tc.want, "%v", tc.args)
	}
}

// The aware binary runs in every workload pod and as the controller: the
// Pulumi SDK, which doubled its size and its memory at start (measured
// 40 → 92 MB maximum RSS for `aware trace --help`), stays in aware-testbed.
func TestAwareLeavesPulumiOut(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	require.NoError(t, err)
	for _, pkg := range strings.Fields(string(out)) {
		assert.False(t, strings.HasPrefix(pkg, "github.com/pulumi/"), "aware imports %s", pkg)
	}
}

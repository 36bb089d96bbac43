package layers

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type listed struct {
	ImportPath string
	Standard   bool
	Imports    []string
	Module     *struct{ Path string }
}

// packages lists every package of the module and everything they import,
// without tests (a test may reach for a harness above it: a control plane,
// a generated pool).
func packages(t *testing.T) map[string]listed {
	t.Helper()
	root, err := exec.Command("go", "env", "GOMOD").Output()
	require.NoError(t, err)
	cmd := exec.Command("go", "list", "-deps", "-json", "./...")
	cmd.Dir = filepath.Dir(strings.TrimSpace(string(root)))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "go list: %s", stderr.String())
	all := map[string]listed{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p listed
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else {
			require.NoError(t, err)
		}
		all[p.ImportPath] = p
	}
	return all
}

func rel(path string) (string, bool) {
	if path == Module {
		return ".", true
	}
	r, ok := strings.CutPrefix(path, Module+"/")
	return r, ok
}

// violations are the module's imports that break the rules, one line
// each, and how many of the module's packages were checked.
func violations(all map[string]listed) (out []string, checked int) {
	for _, p := range all {
		from, ok := rel(p.ImportPath)
		if !ok || p.Module == nil || p.Module.Path != Module {
			continue
		}
		checked++
		room, ok := RoomOf(from)
		if !ok {
			out = append(out, from+": in no room: give its folder one in internal/layers and docs/architecture.md")
			continue
		}
		for _, imp := range p.Imports {
			if to, ok := rel(imp); ok {
				if !Allowed(room, to) {
					out = append(out, from+" imports "+to+": the "+room.Prefix+" room may import only "+strings.Join(room.Imports, ", ")+" ("+room.Why+")")
				}
				continue
			}
			if dep, ok := all[imp]; (ok && dep.Standard) || imp == "C" || imp == "unsafe" {
				continue
			}
			if !OutsideAllowed(room, imp) {
				out = append(out, from+" imports "+imp+": the "+room.Prefix+" room may import only "+strings.Join(room.Outside, ", ")+" outside the standard library ("+room.Why+")")
			}
		}
	}
	sort.Strings(out)
	return out, checked
}

// TestLayering fails on an import that goes up a layer
// (docs/architecture.md).
func TestLayering(t *testing.T) {
	if testing.Short() {
		t.Skip("lists every package with the go command")
	}
	v, checked := violations(packages(t))
	require.Greater(t, checked, 50, "the module's packages were checked")
	assert.Empty(t, v, "imports that break docs/architecture.md's layering")
}

func TestRules(t *testing.T) {
	for _, tc := range []struct {
		from, to string
		ok       bool
	}{
		{"workloads/sim", "gym", true},
		{"workloads/sim", "controller/autoscaler", false},
		{"workloads/sim", "evaluation/plot", false},
		{"controller/agents", "controller/rl/agent/ddpg", true},
		{"controller/agents", "workloads/sim", false},
		{"controller/rl/agent", "controller/rl", true},
		{"controller/rl", "gym", false},
		{"controller/api/v1alpha1", "controller/autoscaler", false},
		{"infra/cluster", "infra/localproc", true},
		{"infra/cluster", "testbed", false},
		{"testbed/local", "evaluation/pool", false},
		{"testbed/local", "generator", true},
		{"evaluation/study/lab", "testbed", true},
		{"evaluation/study/lab", "evaluation/study/adaptation", false},
		{"evaluation/study/adaptation", "evaluation/study/serving", false},
		{"evaluation/study/adaptation", "evaluation/train", true},
		{"evaluation/study", "evaluation/study/lab", false},
		{"evaluation/train", "evaluation/study/suite", false},
		{"evaluation/study/suite", "evaluation/study/serving", true},
		{"controller/autoscaler", "controller/rl/agent/ddpg", false},
		{"controller/autoscaler", "controller/agents", false},
		{"controller/autoscaler", "controller/shard", true},
		{"controller/agents", "controller/meta", true},
		{"controller/meta", "controller/rl", true},
		{"controller/meta", "gym", false},
		{"controller/bootstrap", "workloads/sim", false},
		{"controller/recommender/mpa", "controller/recommender/vpa", true},
		{"controller/recommender", "controller/api/v1alpha1", false},
		{"testbed", "evaluation/study", false},
		{"generator", "controller/api/v1alpha1", true},
		{"generator", "controller/autoscaler", false},
		{"internal/quantile", "gym", false},
		{"cmd/aware", "evaluation/study/suite", true},
	} {
		room, ok := RoomOf(tc.from)
		require.True(t, ok, tc.from)
		assert.Equal(t, tc.ok, Allowed(room, tc.to), "%s → %s", tc.from, tc.to)
	}
	_, ok := RoomOf("newfolder/pkg")
	assert.False(t, ok, "a package outside every room")
	meta, _ := RoomOf("controller/meta")
	assert.False(t, OutsideAllowed(meta, "sigs.k8s.io/controller-runtime/pkg/client"), "the meta learner is gonum only")
	rl, _ := RoomOf("controller/rl/agent/ppo")
	assert.True(t, OutsideAllowed(rl, "gonum.org/v1/gonum/mat"))
	assert.False(t, OutsideAllowed(rl, "k8s.io/client-go/rest"))
	api, _ := RoomOf("controller/api/v1alpha1")
	assert.True(t, OutsideAllowed(api, "k8s.io/apimachinery/pkg/runtime"))
	assert.False(t, OutsideAllowed(api, "sigs.k8s.io/controller-runtime/pkg/client"))
}

// A planted upward import is found (the check can fail).
func TestViolationsFindsAnUpwardImport(t *testing.T) {
	mod := &struct{ Path string }{Module}
	all := map[string]listed{
		Module + "/workloads/sim":   {ImportPath: Module + "/workloads/sim", Module: mod, Imports: []string{"fmt", Module + "/gym", Module + "/evaluation/plot"}},
		Module + "/gym":             {ImportPath: Module + "/gym", Module: mod},
		Module + "/evaluation/plot": {ImportPath: Module + "/evaluation/plot", Module: mod},
		Module + "/controller/rl":   {ImportPath: Module + "/controller/rl", Module: mod, Imports: []string{"k8s.io/client-go/rest"}},
		"fmt":                       {ImportPath: "fmt", Standard: true},
		"k8s.io/client-go/rest":     {ImportPath: "k8s.io/client-go/rest"},
	}
	v, checked := violations(all)
	assert.Equal(t, 4, checked)
	require.Len(t, v, 2)
	assert.Contains(t, v[0], "controller/rl imports k8s.io/client-go/rest")
	assert.Contains(t, v[1], "workloads/sim imports evaluation/plot")
}

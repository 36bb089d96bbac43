package agents

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/aware-autoscaler/aware/controller/api/v1alpha1"
	"github.com/aware-autoscaler/aware/controller/rl"
	"github.com/aware-autoscaler/aware/controller/rl/agent"
	"github.com/aware-autoscaler/aware/gym"
	"github.com/aware-autoscaler/aware/internal/atomicfile"
)

// Initial policies: a policy trained elsewhere (on the simulator, for
// another cluster) that an MPA's agent starts from instead of a fresh
// agent. A policy is a folder of the runner's policies folder
// (WithPolicies) holding agentFile, the agent's own Save, and policyFile,
// a PolicyInfo; WritePolicy writes one.
const (
	// AnnotationInitialPolicy on an MPA names the policy (a folder of the
	// runner's policies folder, a DNS-1123 label) its agent starts from
	// when it has no checkpoint of its own.
	AnnotationInitialPolicy = "agents.aware.dev/initial-policy"
	// ReasonInitialPolicyUnreadable withholds the recommendation of an
	// MPA whose initial policy cannot be used: the MPA gets no agent
	// (HPA+VPA acts) until it can.
	ReasonInitialPolicyUnreadable = "InitialPolicyUnreadable"

	policyFile = "policy.json" // PolicyInfo, written after agentFile
)

// Kinds of agent a policy holds, as the runner makes them (NewFactory):
// KindBCQ is what it makes for an MPA that bootstraps, KindDDPG for one
// that does not.
const (
	KindDDPG = "ddpg"
	KindBCQ  = "bcq"
)

// PolicyInfo is a policy's policy.json: what agent its agent.ckpt holds
// and what it was trained on.
type PolicyInfo struct {
	Kind      string `json:"kind"`      // KindDDPG or KindBCQ
	StateDim  int    `json:"stateDim"`  // gym.StateDim, plus the meta learner's embedding with --meta
	ActionDim int    `json:"actionDim"` // gym.ActDim
	Actions   string `json:"actions"`   // the gym.Mapping it acted through: "relative" or "absolute"
}

// check says what is wrong with info, if anything, and returns its
// mapping.
func (info PolicyInfo) check() (gym.Mapping, error) {
	var errs []error
	if info.Kind != KindDDPG && info.Kind != KindBCQ {
		errs = append(errs, fmt.Errorf("kind %q: want %q or %q", info.Kind, KindDDPG, KindBCQ))
	}
	if info.StateDim < 1 {
		errs = append(errs, fmt.Errorf("stateDim %d: want a positive width", info.StateDim))
	}
	if info.ActionDim != gym.ActDim {
		errs = append(errs, fmt.Errorf("actionDim %d: the runner's agents have %d actions", info.ActionDim, gym.ActDim))
	}
	m, err := gym.ParseMapping(info.Actions)
	if err != nil {
		errs = append(errs, fmt.Errorf("actions: %w", err))
	}
	return m, errors.Join(errs...)
}

// WritePolicy writes ag as a policy into dir (created if missing): its
// agent.ckpt (ag's Save, which writes atomically) and then its
// policy.json (atomically, internal/atomicfile) saying kind, stateDim and
// mapping, the mapping ag acted through. A policy.json already in dir is
// removed first, so that a reader never meets an earlier policy.json
// beside the new weights: a folder without policy.json is not a policy
// yet. The written checkpoint is read back and must hold an agent of
// kind with stateDim-wide states and gym.ActDim actions.
func WritePolicy(dir string, ag agent.Agent, kind string, stateDim int, mapping gym.Mapping) error {
	info := PolicyInfo{Kind: kind, StateDim: stateDim, ActionDim: gym.ActDim, Actions: mapping.String()}
	err := func() error {
		if ag == nil {
			return errors.New("nil agent")
		}
		if _, err := info.check(); err != nil {
			return err
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		if err := os.Remove(filepath.Join(dir, policyFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		ckpt := filepath.Join(dir, agentFile)
		if err := ag.Save(ckpt); err != nil {
			return err
		}
		if _, err := checkPolicyCheckpoint(ckpt, info); err != nil {
			return err
		}
		b, err := json.MarshalIndent(info, "", "  ")
		if err != nil {
			return err
		}
		return atomicfile.Write(filepath.Join(dir, policyFile), append(b, '\n'), 0o644)
	}()
	if err != nil {
		return fmt.Errorf("agents: writing the policy %s: %w", dir, err)
	}
	return nil
}

// ReadPolicy reads and checks the policy.json of the policy in dir; the
// error matches fs.ErrNotExist when there is none.
func ReadPolicy(dir string) (PolicyInfo, error) {
	var info PolicyInfo
	path := filepath.Join(dir, policyFile)
	b, err := os.ReadFile(path)
	if err != nil {
		return info, err
	}
	if err := json.Unmarshal(b, &info); err != nil {
		return info, fmt.Errorf("%s: %w", path, err)
	}
	if _, err := info.check(); err != nil {
		return info, fmt.Errorf("%s: %w", path, err)
	}
	return info, nil
}

// checkPolicyCheckpoint says whether the checkpoint at path holds the
// agent info describes, and returns its update count.
func checkPolicyCheckpoint(path string, info PolicyInfo) (int, error) {
	c, err := rl.ReadCheckpoint(path)
	if err != nil {
		return 0, err
	}
	var m struct {
		Algo      string `json:"algo"`
		StateDim  int    `json:"stateDim"`
		ActionDim int    `json:"actionDim"`
		Updates   int    `json:"updates"`
	}
	if err := c.Meta(&m); err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	if m.Algo != info.Kind || m.StateDim != info.StateDim || m.ActionDim != info.ActionDim {
		return 0, fmt.Errorf("%s holds a %s agent of %d-wide states and %d actions, not the %s agent of %d-wide states and %d actions %s names",
			path, m.Algo, m.StateDim, m.ActionDim, info.Kind, info.StateDim, info.ActionDim, policyFile)
	}
	return m.Updates, nil
}

// initialPolicyOf is the MPA's initial policy annotation, if it has one.
func initialPolicyOf(m *v1alpha1.MultidimPodAutoscaler) (string, bool) {
	name, ok := m.Annotations[AnnotationInitialPolicy]
	return name, ok
}

// policyPath is the folder of the initial policy name ("" when the runner
// has no policies folder).
func (r *Runner) policyPath(name string) string {
	if r.cfg.policies == "" {
		return ""
	}
	return filepath.Join(r.cfg.policies, name)
}

// loadedPolicy is what an agent loaded from an initial policy is.
type loadedPolicy struct {
	Kind    string // KindDDPG or KindBCQ
	Updates int    // the agent's update count
}

// initialPolicy loads the initial policy name into an agent made as the
// runner makes a fresh one for the MPA (its factory and seed): into ag, a
// fresh agent of the MPA, when the policy is of the kind the MPA gets,
// else into a new agent of the policy's kind. It returns the agent, or
// what is wrong: no policies folder, a name that is no DNS-1123 label, a
// missing or unreadable folder, a state width or action mapping other
// than the runner's, weights that do not load.
func (w *worker) initialPolicy(name string, ag agent.Agent) (agent.Agent, loadedPolicy, error) {
	var none loadedPolicy
	if w.r.cfg.policies == "" {
		return nil, none, errors.New("this runner has no policies folder (--policies)")
	}
	if errs := validation.IsDNS1123Label(name); len(errs) > 0 {
		return nil, none, fmt.Errorf("%q is not a policy name (a DNS-1123 label): %s", name, strings.Join(errs, "; "))
	}
	dir := w.r.policyPath(name)
	if st, err := os.Stat(dir); err != nil {
		return nil, none, err
	} else if !st.IsDir() {
		return nil, none, fmt.Errorf("%s is not a folder", dir)
	}
	info, err := ReadPolicy(dir)
	if err != nil {
		return nil, none, err
	}
	if want := w.r.stateDim(); info.StateDim != want {
		how := "the AWARE state"
		if w.r.cfg.meta != nil {
			how = "the AWARE state and the meta learner's embedding"
		}
		return nil, none, fmt.Errorf("%s: the policy's states are %d wide, this runner feeds the agent %d (%s)", filepath.Join(dir, policyFile), info.StateDim, want, how)
	}
	if mapping, _ := info.check(); mapping != w.r.cfg.mapping {
		return nil, none, fmt.Errorf("%s: the policy acts through %s actions, this runner's agents act through %s (--actions)", filepath.Join(dir, policyFile), mapping, w.r.cfg.mapping)
	}
	ckpt := filepath.Join(dir, agentFile)
	updates, err := checkPolicyCheckpoint(ckpt, info)
	if err != nil {
		return nil, none, err
	}
	if boot := info.Kind == KindBCQ; boot != w.boot || ag == nil {
		if ag, err = w.r.cfg.factory(info.StateDim, gym.ActDim, boot, w.seed); err != nil {
			return nil, none, fmt.Errorf("new %s agent: %w", info.Kind, err)
		}
	}
	if err := ag.Load(ckpt); err != nil {
		return nil, none, err
	}
	return ag, loadedPolicy{Kind: info.Kind, Updates: updates}, nil
}

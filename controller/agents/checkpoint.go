package agents

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/aware-autoscaler/aware/gym"
	"github.com/aware-autoscaler/aware/internal/atomicfile"
)

// Checkpoint files in an agent's folder.
const (
	agentFile = "agent.ckpt" // the agent's weights and optimiser state (its own Save)
	stateFile = "state.json" // State, written after agentFile
)

// State is what the runner keeps of one MPA's agent besides its weights,
// written beside them after every save.
type State struct {
	UID string `json:"uid"` // the MPA's UID (folders are per UID: a re-created MPA starts afresh)
	MPA string `json:"mpa"` // namespace/name
	// Stage and Episode are the MPA's status.agent stage and episode when
	// saved.
	Stage   string `json:"stage"`
	Episode int64  `json:"episode"`
	// Episodes and Steps count the runner's own acting episodes and steps;
	// Updates is the agent's training-update count (restored with its
	// weights: a runner that lost the weights would count from zero).
	Episodes int `json:"episodes"`
	Steps    int `json:"steps"`
	Updates  int `json:"updates"`
	// RecordsUntil: the OFFLINE records before this time were trained on.
	RecordsUntil time.Time `json:"recordsUntil"`
	// OfflineTransitions are the OFFLINE transitions the agent has
	// observed, and OfflineOwed the OFFLINE updates it still owes for
	// them (WithUpdates' offline count per transition, of which those a
	// replay smaller than a minibatch could not run yet).
	OfflineTransitions int       `json:"offlineTransitions,omitempty"`
	OfflineOwed        int       `json:"offlineOwed,omitempty"`
	Saved              time.Time `json:"saved"`
	// Actions is the gym.Mapping the agent acted through; empty in
	// checkpoints from before it was recorded, which mapped absolutely.
	Actions string `json:"actions,omitempty"`
	// Kind is the kind of agent (KindDDPG, KindBCQ) when it started from
	// an initial policy (WithPolicies), whose kind may not be the one the
	// runner makes for the MPA; empty for the runner's own agents.
	Kind string `json:"kind,omitempty"`
}

// Mapping is the gym.Mapping the checkpointed agent acted through.
func (s State) Mapping() (gym.Mapping, error) {
	if s.Actions == "" {
		return gym.Absolute, nil
	}
	return gym.ParseMapping(s.Actions)
}

// ReadState reads the State in an agent's checkpoint folder; the error
// matches fs.ErrNotExist when there is none.
func ReadState(dir string) (State, error) {
	var st State
	b, err := os.ReadFile(filepath.Join(dir, stateFile))
	if err != nil {
		return st, err
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return st, fmt.Errorf("%s: %w", filepath.Join(dir, stateFile), err)
	}
	return st, nil
}

// writeState writes st to dir atomically (internal/atomicfile).
func writeState(dir string, st State) error {
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.Write(filepath.Join(dir, stateFile), append(b, '\n'), 0o600)
}

// quarantine moves an unreadable checkpoint folder aside (nothing is
// deleted) and returns where it went.
func quarantine(dir string, now time.Time) (string, error) {
	return quarantineAs(dir, fmt.Sprintf("%s.unreadable-%d", dir, now.UnixNano()))
}

// quarantineAs moves a checkpoint folder to to (a missing folder is not an
// error).
func quarantineAs(dir, to string) (string, error) {
	if err := os.Rename(dir, to); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("moving the checkpoint %s aside: %w", dir, err)
	}
	return to, nil
}

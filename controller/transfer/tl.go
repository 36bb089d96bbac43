package transfer

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/aware-autoscaler/aware/controller/rl/agent"
)

// Copy is TL's transfer: dst takes src's learnt state (weights and
// optimiser state, what Save writes) through a checkpoint file in a
// temporary directory under dir ("" for the system's), and then trains on
// its own application. Both agents must have the same shape.
func Copy(dst, src agent.Agent, dir string) error {
	tmp, err := os.MkdirTemp(dir, "aware-tl-")
	if err != nil {
		return fmt.Errorf("transfer: %w", err)
	}
	defer os.RemoveAll(tmp)
	path := filepath.Join(tmp, "policy.ckpt")
	if err := src.Save(path); err != nil {
		return fmt.Errorf("transfer: save the source policy: %w", err)
	}
	if err := dst.Load(path); err != nil {
		return fmt.Errorf("transfer: load into the target agent: %w", err)
	}
	return nil
}

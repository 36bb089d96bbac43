package objstore

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// ErrNoBinary is returned by StartLocal when the versitygw binary cannot be
// found; tests skip on it (unless CI=true).
var ErrNoBinary = errors.New("versitygw binary not found")

// EnvVersitygw names the versitygw binary to run, overriding the search.
const EnvVersitygw = "AWARE_VERSITYGW"

// findVersitygw returns $AWARE_VERSITYGW, else .bin/versitygw in the
// directory holding go.mod above the working directory, else versitygw on
// PATH.
func findVersitygw() (string, error) {
	if p := os.Getenv(EnvVersitygw); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("%s=%s: %w: %w", EnvVersitygw, p, ErrNoBinary, err)
		}
		return p, nil
	}
	if wd, err := os.Getwd(); err == nil {
		for d := wd; ; d = filepath.Dir(d) {
			if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
				p := filepath.Join(d, ".bin", "versitygw")
				if _, err := os.Stat(p); err == nil {
					return p, nil
				}
				break
			}
			if filepath.Dir(d) == d {
				break
			}
		}
	}
	p, err := exec.LookPath("versitygw")
	if err != nil {
		return "", fmt.Errorf("%w (set %s, run ci/setup.sh to build .bin/versitygw, or put it on PATH)", ErrNoBinary, EnvVersitygw)
	}
	return p, nil
}

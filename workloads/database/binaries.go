package database

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

// ErrNoBinary is returned by StartLocal when the PostgreSQL server binaries
// cannot be found; tests skip on it (unless CI=true).
var ErrNoBinary = errors.New("PostgreSQL server binaries (initdb, postgres) not found")

// EnvBinDir names the directory holding initdb and postgres, overriding the
// search.
const EnvBinDir = "AWARE_PG_BINDIR"

// serverUser is the account the server runs as when this process is root
// (PostgreSQL refuses to run as root).
const serverUser = "postgres"

// findBinDir returns $AWARE_PG_BINDIR, else the highest-versioned
// /usr/lib/postgresql/*/bin (Debian's layout), else the directory of initdb
// on PATH. The directory must hold both initdb and postgres.
func findBinDir() (string, error) {
	check := func(dir, origin string) (string, error) {
		for _, b := range []string{"initdb", "postgres"} {
			if _, err := os.Stat(filepath.Join(dir, b)); err != nil {
				return "", fmt.Errorf("%s: %w: %w", origin, ErrNoBinary, err)
			}
		}
		return dir, nil
	}
	if d := os.Getenv(EnvBinDir); d != "" {
		return check(d, EnvBinDir+"="+d)
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	version := func(d string) float64 {
		v, _ := strconv.ParseFloat(filepath.Base(filepath.Dir(d)), 64)
		return v
	}
	slices.SortFunc(dirs, func(a, b string) int {
		switch va, vb := version(a), version(b); {
		case va < vb:
			return 1
		case va > vb:
			return -1
		}
		return 0
	})
	for _, d := range dirs {
		if dir, err := check(d, d); err == nil {
			return dir, nil
		}
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		return check(filepath.Dir(p), "initdb on PATH")
	}
	return "", fmt.Errorf("%w (set %s, install Debian's postgresql package with ci/setup.sh, or put initdb on PATH)", ErrNoBinary, EnvBinDir)
}

// account is the identity the server runs as; nil credential means "this
// process's own".
type account struct {
	name     string
	uid, gid uint32
	cred     *syscall.Credential
}

// serverAccount returns the postgres account when running as root, else
// the current user.
func serverAccount() (account, error) {
	if os.Geteuid() != 0 {
		return account{name: "current user", uid: uint32(os.Geteuid()), gid: uint32(os.Getegid())}, nil
	}
	u, err := user.Lookup(serverUser)
	if err != nil {
		return account{}, fmt.Errorf("running as root, PostgreSQL must run as user %q: %w", serverUser, err)
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err := errors.Join(err1, err2); err != nil {
		return account{}, fmt.Errorf("user %q: %w", serverUser, err)
	}
	return account{
		name: serverUser, uid: uint32(uid), gid: uint32(gid),
		cred: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)},
	}, nil
}

// own makes path belong to the account (a no-op without credential change).
func (a account) own(path string) error {
	if a.cred == nil {
		return nil
	}
	if err := os.Chown(path, int(a.uid), int(a.gid)); err != nil {
		return fmt.Errorf("give %s to user %s: %w", path, a.name, err)
	}
	return nil
}

// ensureReachable checks that the account can traverse every directory
// from / down to dir. When running as root, a directory under the system
// temporary directory that lacks the permission gets search-only access
// for others (o+x: entering, not listing), which is what os.MkdirTemp's
// 0700 directories need; elsewhere the error says which directory to fix.
func (a account) ensureReachable(dir string) error {
	if a.cred == nil {
		return nil
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	tmp, _ := filepath.Abs(os.TempDir())
	var chain []string // abs and its ancestors, root first
	for d := abs; ; d = filepath.Dir(d) {
		chain = append(chain, d)
		if filepath.Dir(d) == d {
			break
		}
	}
	slices.Reverse(chain)
	for _, path := range chain {
		fi, err := os.Stat(path)
		if err != nil {
			return err
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok {
			continue
		}
		mode := uint32(fi.Mode().Perm())
		var can bool
		switch {
		case st.Uid == a.uid:
			can = mode&0o100 != 0
		case st.Gid == a.gid:
			can = mode&0o010 != 0
		default:
			can = mode&0o001 != 0
		}
		if can {
			continue
		}
		if rel, err := filepath.Rel(tmp, path); err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, "../") {
			return fmt.Errorf("user %s cannot reach %s: directory %s (mode %#o) is not searchable by it; chmod o+x it or use a directory under %s",
				a.name, abs, path, mode, tmp)
		}
		if err := os.Chmod(path, fi.Mode()&(fs.ModePerm|fs.ModeSetgid|fs.ModeSticky)|0o001); err != nil {
			return fmt.Errorf("let user %s reach %s: %w", a.name, abs, err)
		}
	}
	return nil
}

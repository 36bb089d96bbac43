package objstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/aware-autoscaler/aware/infra/localproc"
)

// localRegion is the region the local gateway serves.
const localRegion = "us-east-1"

// outputTail is how much of the gateway's output errors quote.
const outputTail = 8 << 10

// startTimeout bounds StartLocal when ctx has no earlier deadline.
const startTimeout = 60 * time.Second

// Local is a versitygw gateway with a POSIX backend started by StartLocal.
type Local struct {
	cfg  Config
	dir  string
	proc *localproc.Process
	once sync.Once
	err  error
}

// StartLocal starts versitygw on a free 127.0.0.1 port with random
// credentials, storing buckets as directories under dir/data, and waits until
// it answers HTTP. ctx bounds the start only; the gateway runs until Stop
// (or until this process dies). The binary is $AWARE_VERSITYGW, else
// .bin/versitygw at the module root, else versitygw on PATH; if none exists
// the error matches ErrNoBinary.
func StartLocal(ctx context.Context, dir string) (*Local, error) {
	bin, err := findVersitygw()
	if err != nil {
		return nil, err
	}
	if dir, err = filepath.Abs(dir); err != nil {
		return nil, fmt.Errorf("local object store: %w", err)
	}
	data := filepath.Join(dir, "data")
	if err := os.MkdirAll(data, 0o700); err != nil {
		return nil, fmt.Errorf("local object store: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	// A port found free may be taken before the gateway binds it: retry.
	for attempt := 1; ; attempt++ {
		l, err := startVersitygw(ctx, bin, dir, data)
		if err == nil {
			return l, nil
		}
		if attempt == 3 || !errors.Is(err, errPortTaken) {
			return nil, err
		}
	}
}

var errPortTaken = errors.New("port taken")

func startVersitygw(ctx context.Context, bin, dir, data string) (*Local, error) {
	port, err := localproc.FreePort()
	if err != nil {
		return nil, fmt.Errorf("local object store: %w", err)
	}
	access, secret := randomKey(10), randomKey(20)
	addr := "127.0.0.1:" + strconv.Itoa(port)
	proc, err := localproc.Start(bin, []string{"--port", addr, "--region", localRegion, "--quiet", "posix", data},
		// Credentials go through the environment, not argv, to keep them
		// out of process listings.
		localproc.WithEnv(append(os.Environ(), "ROOT_ACCESS_KEY="+access, "ROOT_SECRET_KEY="+secret)),
		localproc.WithDir(dir), localproc.WithTail(outputTail), localproc.WithDeathSignal(syscall.SIGKILL))
	if err != nil {
		return nil, fmt.Errorf("local object store: %w", err)
	}
	l := &Local{
		cfg: Config{Endpoint: addr, AccessKey: access, SecretKey: secret,
			Bucket: DefaultBucket, Region: localRegion},
		dir: dir, proc: proc,
	}
	// Any HTTP answer means the gateway is up.
	if err := proc.WaitReady(ctx, 0, 50*time.Millisecond, localproc.HTTPProbe(nil, "http://"+addr+"/", 0)); err != nil {
		if !proc.Exited() {
			_ = proc.Stop(syscall.SIGKILL, 5*time.Second)
		}
		if strings.Contains(proc.LogTail(outputTail), "address already in use") {
			err = fmt.Errorf("%w: %w", errPortTaken, err)
		}
		return nil, fmt.Errorf("local object store (%s posix %s on %s): %w", bin, data, addr, err)
	}
	return l, nil
}

// randomKey returns n random bytes hex-encoded. Credentials must not be
// predictable, so they come from crypto/rand, not a seeded source.
func randomKey(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // never fails on Linux
	return hex.EncodeToString(b)
}

// Config returns the settings to Connect to the gateway (bucket "aware").
func (l *Local) Config() Config { return l.cfg }

// Pid returns the object store server's process ID.
func (l *Local) Pid() int { return l.proc.Pid() }

// Dir returns the directory holding the gateway's data.
func (l *Local) Dir() string { return l.dir }

// Stop terminates the gateway (SIGTERM, then SIGKILL after 10s). It is safe
// to call more than once; later calls return the first result.
func (l *Local) Stop() error {
	l.once.Do(func() {
		if err := l.proc.Stop(syscall.SIGTERM, 10*time.Second); err != nil {
			l.err = fmt.Errorf("stop local object store on %s: %w; output:\n%s", l.cfg.Endpoint, err, strings.TrimSpace(l.proc.LogTail(outputTail)))
		}
	})
	return l.err
}

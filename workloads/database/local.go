package database

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/aware-autoscaler/aware/infra/localproc"
)

// LocalDatabase is the database StartLocal creates and URL points to.
const LocalDatabase = "aware"

// startTimeout bounds StartLocal when ctx has no earlier deadline.
const startTimeout = 2 * time.Minute

// logTail is how much of the server's log errors quote.
const logTail = 4096

// maxSocketPath is the longest Unix socket path Linux accepts (sun_path).
const maxSocketPath = 107

// Local is a PostgreSQL cluster started by StartLocal.
type Local struct {
	dir     string
	logPath string
	port    int
	proc    *localproc.Process
	once    sync.Once
	err     error
}

// StartLocal runs a private PostgreSQL server with its cluster in
// dir/data: initdb (superuser "postgres", trust authentication, UTF8, C
// locale) unless dir/data already holds a cluster, then postgres on a free
// 127.0.0.1 port with its Unix socket in dir/run (TCP only if that path is
// too long for a socket) and its log in dir/postgres.log. It waits until the
// server accepts connections and creates the database "aware". Durability
// settings are PostgreSQL's defaults (fsync on), so writes cost what they
// cost in production; only initdb skips its final sync (--no-sync), which
// is safe for a throwaway cluster.
//
// When this process is root the server runs as the "postgres" user: dir is
// handed to it, and directories on the way to dir under the system temp dir
// get search permission for others (see the package tests). ctx bounds the
// start only; the server runs until Stop (or until this process dies). If
// the binaries are missing the error matches ErrNoBinary.
func StartLocal(ctx context.Context, dir string) (*Local, error) {
	bin, err := findBinDir()
	if err != nil {
		return nil, err
	}
	acct, err := serverAccount()
	if err != nil {
		return nil, fmt.Errorf("local PostgreSQL: %w", err)
	}
	if dir, err = filepath.Abs(dir); err != nil {
		return nil, fmt.Errorf("local PostgreSQL: %w", err)
	}
	data, run := filepath.Join(dir, "data"), filepath.Join(dir, "run")
	for _, d := range []string{data, run} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, fmt.Errorf("local PostgreSQL: %w", err)
		}
		if err := acct.own(d); err != nil {
			return nil, fmt.Errorf("local PostgreSQL: %w", err)
		}
	}
	if err := acct.ensureReachable(dir); err != nil {
		return nil, fmt.Errorf("local PostgreSQL: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	if _, err := os.Stat(filepath.Join(data, "PG_VERSION")); err != nil {
		if err := initdb(ctx, bin, data, acct); err != nil {
			return nil, err
		}
	}
	l := &Local{dir: dir, logPath: filepath.Join(dir, "postgres.log")}
	sockets := run
	if len(run)+len("/.s.PGSQL.65535") > maxSocketPath {
		sockets = "" // TCP only
	}
	// A port found free may be taken before the server binds it: retry.
	for attempt := 1; ; attempt++ {
		err = l.start(ctx, bin, data, sockets, acct)
		if err == nil {
			break
		}
		if attempt == 3 || !errors.Is(err, errPortTaken) {
			return nil, err
		}
	}
	if err := l.createDatabase(ctx); err != nil {
		_ = l.Stop()
		return nil, err
	}
	return l, nil
}

var errPortTaken = errors.New("port taken")

// serverEnv is this process's environment without PG* variables, which
// would otherwise change what initdb and postgres do.
func serverEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PG") {
			env = append(env, kv)
		}
	}
	return env
}

func initdb(ctx context.Context, bin, data string, acct account) error {
	cmd := exec.CommandContext(ctx, filepath.Join(bin, "initdb"), "--pgdata", data,
		"--username", "postgres", "--auth", "trust", "--encoding", "UTF8", "--locale", "C", "--no-sync")
	cmd.Env = serverEnv()
	cmd.Dir = data
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: acct.cred}
	out, err := cmd.CombinedOutput()
	if err != nil {
		s := strings.TrimSpace(string(out))
		if len(s) > logTail {
			s = s[len(s)-logTail:]
		}
		return fmt.Errorf("local PostgreSQL: initdb %s (as %s): %w; output:\n%s", data, acct.name, err, s)
	}
	return nil
}

// start runs postgres on a free port, appending its output to l.logPath,
// and waits until it accepts connections.
func (l *Local) start(ctx context.Context, bin, data, sockets string, acct account) error {
	port, err := localproc.FreePort()
	if err != nil {
		return fmt.Errorf("local PostgreSQL: %w", err)
	}
	path := filepath.Join(bin, "postgres")
	proc, err := localproc.Start(path, []string{"-D", data, "-p", strconv.Itoa(port),
		"-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories=" + sockets},
		localproc.WithEnv(serverEnv()), localproc.WithDir(data), localproc.WithCredential(acct.cred),
		localproc.WithLogFileAppend(l.logPath),
		// SIGQUIT is PostgreSQL's immediate shutdown: it also ends the
		// backends.
		localproc.WithDeathSignal(syscall.SIGQUIT))
	if err != nil {
		return fmt.Errorf("local PostgreSQL: %w", err)
	}
	l.port, l.proc = port, proc
	if err := proc.WaitReady(ctx, 0, 100*time.Millisecond, l.probe); err != nil {
		if !proc.Exited() {
			_ = proc.Stop(syscall.SIGQUIT, 10*time.Second)
		}
		out := proc.LogTail(logTail)
		if strings.Contains(out, "could not bind") || strings.Contains(out, "already in use") {
			err = fmt.Errorf("%w: %w", errPortTaken, err)
		}
		return fmt.Errorf("local PostgreSQL (%s -D %s on 127.0.0.1:%d): %w", path, data, port, err)
	}
	return nil
}

// probe succeeds when the server accepts a connection.
func (l *Local) probe(ctx context.Context) error {
	cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	c, err := pgx.Connect(cctx, l.adminURL())
	if err != nil {
		return err
	}
	return c.Close(ctx)
}

func (l *Local) createDatabase(ctx context.Context) error {
	c, err := pgx.Connect(ctx, l.adminURL())
	if err != nil {
		return fmt.Errorf("local PostgreSQL: %w", err)
	}
	defer c.Close(context.Background())
	var exists bool
	if err := c.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", LocalDatabase).Scan(&exists); err != nil {
		return fmt.Errorf("local PostgreSQL: look for database %q: %w", LocalDatabase, err)
	}
	if exists {
		return nil
	}
	if _, err := c.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{LocalDatabase}.Sanitize()); err != nil {
		return fmt.Errorf("local PostgreSQL: create database %q: %w", LocalDatabase, err)
	}
	return nil
}

func (l *Local) adminURL() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", l.port)
}

// URL returns the connection URL of the database "aware".
func (l *Local) URL() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", l.port, LocalDatabase)
}

// Dir returns the directory holding the cluster, its socket and its log.
func (l *Local) Dir() string { return l.dir }

// Pid returns the postmaster's process ID (the backends are its children).
func (l *Local) Pid() int { return l.proc.Pid() }

// Stop shuts the server down like pg_ctl stop -m fast (SIGINT: roll back
// open transactions, end sessions, checkpoint), killing it after 30s. It is
// safe to call more than once; later calls return the first result.
func (l *Local) Stop() error {
	l.once.Do(func() {
		if err := l.proc.Stop(syscall.SIGINT, 30*time.Second); err != nil {
			l.err = fmt.Errorf("stop local PostgreSQL on port %d: %w; log %s:\n%s",
				l.port, err, l.logPath, strings.TrimSpace(localproc.FileTail(l.logPath, logTail, 0)))
		}
	})
	return l.err
}

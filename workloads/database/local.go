package database

import (
	"context"
	"errors"
	"fmt"
	"io"
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

// maxSocketPath is the longest Unix socket path Linux accepts (sun_path).
const maxSocketPath = 107

// Local is a PostgreSQL cluster started by StartLocal.
type Local struct {
	dir     string
	logPath string
	port    int
	proc    *localproc.Process
	logFile *os.File
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
	l.logFile, err = os.OpenFile(l.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("local PostgreSQL: %w", err)
	}
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
			l.logFile.Close()
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
		if len(s) > 4096 {
			s = s[len(s)-4096:]
		}
		return fmt.Errorf("local PostgreSQL: initdb %s (as %s): %w; output:\n%s", data, acct.name, err, s)
	}
	return nil
}

// start runs postgres on a free port and waits until it accepts connections.
func (l *Local) start(ctx context.Context, bin, data, sockets string, acct account) error {
	port, err := localproc.FreePort()
	if err != nil {
		return fmt.Errorf("local PostgreSQL: %w", err)
	}
	logStart, _ := l.logFile.Seek(0, io.SeekEnd)
	cmd := exec.Command(filepath.Join(bin, "postgres"), "-D", data, "-p", strconv.Itoa(port),
		"-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories="+sockets)
	cmd.Env = serverEnv()
	cmd.Dir = data
	cmd.Stdout, cmd.Stderr = l.logFile, l.logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: acct.cred}
	// SIGQUIT is PostgreSQL's immediate shutdown: it also ends the backends.
	proc, err := localproc.Start(cmd, syscall.SIGQUIT)
	if err != nil {
		return fmt.Errorf("local PostgreSQL: %w", err)
	}
	l.port, l.proc = port, proc
	if err := l.waitReady(ctx); err != nil {
		if !proc.Exited() {
			_ = proc.Stop(syscall.SIGQUIT, 10*time.Second)
		}
		out := strings.TrimSpace(localproc.FileTail(l.logPath, 4096, logStart))
		if strings.Contains(out, "could not bind") || strings.Contains(out, "already in use") {
			err = fmt.Errorf("%w: %w", errPortTaken, err)
		}
		return fmt.Errorf("local PostgreSQL (%s -D %s on 127.0.0.1:%d): %w; log %s:\n%s", cmd.Path, data, port, err, l.logPath, out)
	}
	return nil
}

// waitReady polls until the server accepts a connection.
func (l *Local) waitReady(ctx context.Context) error {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var last error
	for {
		if l.proc.Exited() {
			return fmt.Errorf("exited during start: %v", l.proc.Err())
		}
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		c, err := pgx.Connect(cctx, l.adminURL())
		cancel()
		if err == nil {
			return c.Close(ctx)
		}
		last = err
		select {
		case <-ctx.Done():
			return fmt.Errorf("not accepting connections: %w (last: %w)", ctx.Err(), last)
		case <-tick.C:
		}
	}
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

// Stop shuts the server down like pg_ctl stop -m fast (SIGINT: roll back
// open transactions, end sessions, checkpoint), killing it after 30s. It is
// safe to call more than once; later calls return the first result.
func (l *Local) Stop() error {
	l.once.Do(func() {
		if err := l.proc.Stop(syscall.SIGINT, 30*time.Second); err != nil {
			l.err = fmt.Errorf("stop local PostgreSQL on port %d: %w; log %s:\n%s",
				l.port, err, l.logPath, strings.TrimSpace(localproc.FileTail(l.logPath, 4096, 0)))
		}
		if err := l.logFile.Close(); err != nil && l.err == nil {
			l.err = fmt.Errorf("stop local PostgreSQL: %w", err)
		}
	})
	return l.err
}

package remote

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/aware-autoscaler/aware/gym"
)

// ListenConfig is where an environment server listens and how its clients
// authenticate (`aware env serve`). Errors name the command's flags.
type ListenConfig struct {
	Addr      string        // address to listen on
	TokenFile string        // file holding the bearer token
	Insecure  bool          // serve without a token, on a loopback address only
	Timeout   time.Duration // bound on each reset or step (0: none)
	Metrics   bool          // also serve Prometheus metrics at /metrics (without a token)
	// Listening, if set, is told the address once the server listens.
	Listening func(addr string)
}

// Token reads the token, or checks that going without one is allowed
// (Insecure, on a loopback Addr); "" means no token.
func (c ListenConfig) Token(log *slog.Logger) (string, error) {
	if c.TokenFile == "" {
		if !c.Insecure {
			return "", errors.New("--token-file is required (or --insecure, on a loopback address)")
		}
		host, _, err := net.SplitHostPort(c.Addr)
		if err != nil {
			return "", fmt.Errorf("--addr %q: %w", c.Addr, err)
		}
		if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
			return "", fmt.Errorf("--insecure serves without authentication, so only on a loopback address; --addr is %s", c.Addr)
		}
		return "", nil
	}
	if c.Insecure {
		return "", errors.New("--insecure and --token-file are exclusive")
	}
	tok, err := ReadTokenFile(c.TokenFile)
	if err != nil {
		return "", err
	}
	if st, err := os.Stat(c.TokenFile); err == nil && st.Mode().Perm()&0o077 != 0 {
		log.Warn("token file is readable by other users; chmod 600 it", "file", c.TokenFile, "mode", st.Mode().Perm().String())
	}
	return tok, nil
}

// EnvFactory builds the environments to serve, by name.
type EnvFactory func(ctx context.Context) (map[string]gym.Env, error)

// ListenAndServe checks the token, builds the environments, listens on
// cfg.Addr, writes the served names and address to out and serves until
// ctx is cancelled.
func ListenAndServe(ctx context.Context, cfg ListenConfig, envs EnvFactory, out io.Writer, log *slog.Logger) error {
	tok, err := cfg.Token(log)
	if err != nil {
		return err
	}
	built, err := envs(ctx)
	if err != nil {
		return err
	}
	opts := []Option{WithLogger(log), WithTimeout(cfg.Timeout)}
	if tok == "" {
		opts = append(opts, WithInsecure())
	}
	var reg *prometheus.Registry
	if cfg.Metrics {
		reg = prometheus.NewRegistry()
		opts = append(opts, WithMetrics(reg))
	}
	srv, err := NewServer(built, tok, opts...)
	if err != nil {
		return err
	}
	var h http.Handler = srv
	if reg != nil {
		mux := http.NewServeMux()
		mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
		mux.Handle("/", srv)
		h = mux
	}
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen %s: %w", cfg.Addr, err)
	}
	addr := ln.Addr().String()
	names := srv.Names()
	fmt.Fprintf(out, "serving %d environment(s) (%s) on http://%s/v1/envs\n", len(names), strings.Join(names, ", "), addr)
	if cfg.Listening != nil {
		cfg.Listening(addr)
	}
	return Serve(ctx, ln, h, 10*time.Second, log)
}

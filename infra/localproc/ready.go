package localproc

import (
	"context"
	"fmt"
	"net/http"
	"time"
)

// Probe checks once whether a server is ready: nil means ready. It should
// bound its own attempt (WaitReady's ctx bounds only the whole wait).
type Probe func(ctx context.Context) error

// WaitReady calls probe every interval until it returns nil, the process
// exits (an error matching ErrExited), or ctx ends or timeout passes (if
// positive; an error matching ctx's error and the last probe's). Errors
// quote the end of the process's output.
func (p *Process) WaitReady(ctx context.Context, timeout, interval time.Duration, probe Probe) error {
	if interval <= 0 {
		return fmt.Errorf("wait for %s: interval must be positive, got %s", p.cmd.Path, interval)
	}
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		if p.Exited() {
			return p.exitedEarly()
		}
		last := probe(ctx)
		if last == nil {
			return nil
		}
		select {
		case <-p.done:
			return p.exitedEarly()
		case <-ctx.Done():
			return fmt.Errorf("%s not ready: %w (last probe: %w)%s", p.cmd.Path, ctx.Err(), last, p.quoteOutput())
		case <-tick.C:
		}
	}
}

func (p *Process) exitedEarly() error {
	return fmt.Errorf("%s %w during start (%s)%s", p.cmd.Path, ErrExited, p.exitStatus(), p.quoteOutput())
}

// probeTimeout bounds one HTTPProbe request when client is nil.
const probeTimeout = time.Second

// HTTPProbe is a Probe that GETs url with client (nil: one with a 1s
// timeout) and succeeds on status wantStatus, or on any response if
// wantStatus is 0.
func HTTPProbe(client *http.Client, url string, wantStatus int) Probe {
	if client == nil {
		client = &http.Client{Timeout: probeTimeout}
	}
	return func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return fmt.Errorf("probe %s: %w", url, err)
		}
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if wantStatus != 0 && resp.StatusCode != wantStatus {
			return fmt.Errorf("probe %s: status %d, want %d", url, resp.StatusCode, wantStatus)
		}
		return nil
	}
}

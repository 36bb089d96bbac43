package testbedrun

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/aware-autoscaler/aware/controller/api/v1alpha1"
	"github.com/aware-autoscaler/aware/infra/cluster"
	"github.com/aware-autoscaler/aware/testbed/local"
)

// Bed is a running local testbed a study attaches to: its control plane,
// and the endpoints of the processes its supervisor runs (Prometheus, the
// trajectory store, the controller and the agent runner).
type Bed struct {
	// Dir is the testbed's --dir.
	Dir       string
	Endpoints local.Endpoints
	// Clock is the testbed's: its controller step times its time scale.
	Clock Clock
	// TwinTick and TwinSimStep are the testbed's twin's clock (its wall
	// tick, Prometheus's scrape interval, and the simulated time per
	// tick): a study's twin runs on the same.
	TwinTick, TwinSimStep time.Duration
	rest                  *rest.Config
	kube                  kubernetes.Interface
	ctl                   client.Client
}

// Attach finds the local testbed of dir (`aware testbed up --dir DIR`):
// its control plane in DIR/cluster and its supervisor's endpoints in
// DIR/local. A testbed of another target, or one that is not running, is
// an error that says what to run.
func Attach(ctx context.Context, dir string) (*Bed, error) {
	ep, ok := local.Running(filepath.Join(dir, "local"))
	if !ok {
		return nil, fmt.Errorf("testbedrun: no running local testbed in %s (no supervisor answers in %s): run `aware testbed up --dir %s`, or use --testbed-up; studies run on the local target only so far (docs/studies.md)",
			dir, filepath.Join(dir, "local"), dir)
	}
	if ep.Agents == "" {
		return nil, fmt.Errorf("testbedrun: the testbed in %s runs no agent runner (--agents=false): the studies' agents need it", dir)
	}
	wall, err := time.ParseDuration(ep.Step)
	if err != nil {
		return nil, fmt.Errorf("testbedrun: %s: the testbed's step %q: %w", filepath.Join(dir, "local", local.EndpointsFile), ep.Step, err)
	}
	if !(ep.TimeScale >= 1) {
		return nil, fmt.Errorf("testbedrun: %s: time scale %g: the testbed predates the clock setting; bring it up again", filepath.Join(dir, "local", local.EndpointsFile), ep.TimeScale)
	}
	tick, err := time.ParseDuration(ep.TwinTick)
	if err != nil {
		return nil, fmt.Errorf("testbedrun: %s: the twin's tick %q: %w", filepath.Join(dir, "local", local.EndpointsFile), ep.TwinTick, err)
	}
	simStep, err := time.ParseDuration(ep.TwinSimStep)
	if err != nil {
		return nil, fmt.Errorf("testbedrun: %s: the twin's step %q: %w", filepath.Join(dir, "local", local.EndpointsFile), ep.TwinSimStep, err)
	}
	cl, err := cluster.Attach(ctx, filepath.Join(dir, "cluster"))
	if err != nil {
		return nil, fmt.Errorf("testbedrun: %w", err)
	}
	rc, err := clientcmd.BuildConfigFromFlags("", cl.Kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("testbedrun: %w", err)
	}
	rc.QPS, rc.Burst = 50, 100
	kube, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("testbedrun: %w", err)
	}
	scheme := runtime.NewScheme()
	if err := errors.Join(clientgoscheme.AddToScheme(scheme), v1alpha1.AddToScheme(scheme)); err != nil {
		return nil, fmt.Errorf("testbedrun: %w", err)
	}
	ctl, err := client.New(rc, client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("testbedrun: %w", err)
	}
	sim := time.Duration(math.Round(float64(wall) * ep.TimeScale))
	return &Bed{Dir: dir, Endpoints: ep, Clock: Clock{Step: sim.Round(time.Millisecond), Speedup: ep.TimeScale},
		TwinTick: tick, TwinSimStep: simStep, rest: rc, kube: kube, ctl: ctl}, nil
}

// Check refuses to run a study whose clock is not the testbed's.
func (b *Bed) Check(c Clock) error {
	if b.Clock.Step != c.Step || b.Clock.Speedup != c.Speedup || b.TwinSimStep != c.TwinSimStep() {
		return fmt.Errorf("testbedrun: the testbed in %s runs %s; the study needs %s: bring it up with `aware testbed up --dir %s --step %s --time-scale %g`",
			b.Dir, b.Clock, c, b.Dir, c.Wall(), c.Speedup)
	}
	return nil
}

// Up brings up a local testbed in dir for clock c with the aware-testbed
// binary (the Pulumi driver is a binary of its own, docs/testbed.md):
// one application of its own (the study deploys its cells beside it),
// the agent runner and the webhook on. Its output goes to log.
func Up(ctx context.Context, driver, dir string, c Clock, traces string, log io.Writer) error {
	if err := c.Validate(); err != nil {
		return err
	}
	args := []string{"up", "--dir", dir, "--target", "local", "--apps", "1", "--step", c.Wall().String(),
		"--time-scale", strconv.FormatFloat(c.Speedup, 'g', -1, 64)}
	if traces != "" {
		args = append(args, "--traces", traces)
	}
	return runDriver(ctx, driver, args, log)
}

// Down tears the testbed of dir down and removes dir: nothing is left.
func Down(ctx context.Context, driver, dir string, log io.Writer) error {
	err := runDriver(ctx, driver, []string{"down", "--dir", dir}, log)
	return errors.Join(err, os.RemoveAll(dir))
}

func runDriver(ctx context.Context, driver string, args []string, log io.Writer) error {
	cmd := exec.CommandContext(ctx, driver, args...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.WaitDelay = time.Minute
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("testbedrun: %s %v: %w", driver, args, err)
	}
	return nil
}

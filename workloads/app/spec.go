package app

import (
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"

	"sigs.k8s.io/yaml"

	"github.com/aware-autoscaler/aware/workloads/segments"
)

// SpecVersion is the version of the app spec format this package reads.
const SpecVersion = "aware.dev/v1alpha1"

// Spec is an application: a chain of segments run in order per request.
type Spec struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	// Name is a DNS-1123 label naming the application.
	Name string `json:"name"`
	// Seed makes every segment's generated inputs deterministic.
	Seed int64 `json:"seed"`
	// Segments run in order for each request.
	Segments []segments.Spec `json:"segments"`
}

var dnsLabel = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// Validate reports every problem in s, each naming its field.
func (s Spec) Validate() error {
	var errs []error
	if s.APIVersion != SpecVersion {
		errs = append(errs, fmt.Errorf("apiVersion: got %q, want %q", s.APIVersion, SpecVersion))
	}
	if s.Kind != "App" {
		errs = append(errs, fmt.Errorf("kind: got %q, want \"App\"", s.Kind))
	}
	if len(s.Name) > 63 || !dnsLabel.MatchString(s.Name) {
		errs = append(errs, fmt.Errorf("name: %q is not a DNS-1123 label", s.Name))
	}
	if len(s.Segments) == 0 {
		errs = append(errs, errors.New("segments: at least one segment is required"))
	}
	for i, seg := range s.Segments {
		if _, ok := segments.Lookup(seg.Name); !ok {
			errs = append(errs, fmt.Errorf("segments[%d].name: unknown segment %q (known: %v)", i, seg.Name, segments.Names()))
		}
		if seg.Size <= 0 {
			errs = append(errs, fmt.Errorf("segments[%d].size: %d must be positive", i, seg.Size))
		}
	}
	return errors.Join(errs...)
}

// Parse decodes and validates a spec; name is used in error messages.
func Parse(name string, data []byte) (Spec, error) {
	var s Spec
	if err := yaml.UnmarshalStrict(data, &s); err != nil {
		return Spec{}, fmt.Errorf("%s: %w", name, err)
	}
	if err := s.Validate(); err != nil {
		return Spec{}, fmt.Errorf("%s: invalid app spec: %w", name, err)
	}
	return s, nil
}

// Load reads and validates a spec file.
func Load(path string) (Spec, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Spec{}, fmt.Errorf("read app spec: %w", err)
	}
	return Parse(path, data)
}

// Needs reports which external services the chain uses.
func (s Spec) Needs() (objects, db bool) {
	for _, seg := range s.Segments {
		info, _ := segments.Lookup(seg.Name)
		for _, n := range info.Needs {
			objects = objects || n == "objects"
			db = db || n == "db"
		}
	}
	return objects, db
}

// Chain is a prepared application.
type Chain struct {
	spec  Spec
	insts []segments.Instance
}

// Prepare sets up every segment (the app's setup hook). On error, what was
// already set up is torn down.
func Prepare(ctx context.Context, s Spec, env segments.Env) (*Chain, error) {
	c := &Chain{spec: s}
	for i, seg := range s.Segments {
		e := env
		e.Seed = s.Seed + int64(i)*7919
		e.Instance = i
		inst, err := segments.New(ctx, seg, e)
		if err != nil {
			_ = c.Close(ctx)
			return nil, fmt.Errorf("app %s: segments[%d]: %w", s.Name, i, err)
		}
		c.insts = append(c.insts, inst)
	}
	return c, nil
}

// Spec returns the chain's spec.
func (c *Chain) Spec() Spec { return c.spec }

// Run executes the chain once and returns the summed result.
func (c *Chain) Run(ctx context.Context) (segments.Result, error) {
	var total segments.Result
	for i, inst := range c.insts {
		r, err := inst.Run(ctx)
		if err != nil {
			return total, fmt.Errorf("segments[%d] %s: %w", i, c.spec.Segments[i].Name, err)
		}
		total.Add(r)
	}
	return total, nil
}

// Close tears down every prepared segment (the app's teardown hook).
func (c *Chain) Close(ctx context.Context) error {
	var errs []error
	for i := len(c.insts) - 1; i >= 0; i-- {
		if err := c.insts[i].Close(ctx); err != nil {
			errs = append(errs, fmt.Errorf("segments[%d] %s: close: %w", i, c.spec.Segments[i].Name, err))
		}
	}
	c.insts = nil
	return errors.Join(errs...)
}

package faults

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/aware-autoscaler/aware/controller/api/v1alpha1"
	"github.com/aware-autoscaler/aware/controller/target"
)

// badKinds are the ways one pod's metrics go bad in the metrics fault, one
// pod of one MPA each: a NaN memory working set, a CPU counter at +Inf, a
// negative memory working set, and every series of the pod gone.
var badKinds = []string{"nan", "inf", "negative", "missing"}

// corrupter is a prometheus.Gatherer that alters the series of chosen
// pods while a fault is on (see badKinds); otherwise it passes the twin's
// metrics through.
type corrupter struct {
	inner prometheus.Gatherer
	mu    sync.Mutex
	pods  map[string]string // pod name → kind
}

func (c *corrupter) set(pods map[string]string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.pods = pods
}

// Gather implements prometheus.Gatherer.
func (c *corrupter) Gather() ([]*dto.MetricFamily, error) {
	mfs, err := c.inner.Gather()
	c.mu.Lock()
	pods := c.pods
	c.mu.Unlock()
	if len(pods) == 0 {
		return mfs, err
	}
	for _, mf := range mfs {
		mf.Metric = slices.DeleteFunc(mf.Metric, func(m *dto.Metric) bool {
			kind, ok := pods[podLabel(m)]
			if !ok {
				return false
			}
			switch {
			case kind == "missing":
				return true
			case kind == "nan" && mf.GetName() == "container_memory_working_set_bytes" && m.Gauge != nil:
				m.Gauge.Value = ptr.To(math.NaN())
			case kind == "negative" && mf.GetName() == "container_memory_working_set_bytes" && m.Gauge != nil:
				m.Gauge.Value = ptr.To(-1 - m.Gauge.GetValue())
			case kind == "inf" && mf.GetName() == "container_cpu_usage_seconds_total" && m.Counter != nil:
				m.Counter.Value = ptr.To(math.Inf(1))
			}
			return false
		})
	}
	return mfs, err
}

func podLabel(m *dto.Metric) string {
	for _, l := range m.Label {
		if l.GetName() == "pod" {
			return l.GetValue()
		}
	}
	return ""
}

// badMetrics spoils the metrics of one pod each of the first len(badKinds)
// MPAs (see badKinds) for the configured time, then restores them, and
// returns those MPAs and the interval. The MPAs must hold while their
// data is bad; every other MPA must go on stepping.
func (l *lab) badMetrics(ctx context.Context) (held []string, bad [2]time.Time, note string, err error) {
	pods := map[string]string{}
	var what []string
	for i, kind := range badKinds {
		mpa := l.mpas[i]
		pod, err := l.firstPod(ctx, mpa)
		if err != nil {
			return nil, bad, "", err
		}
		pods[pod] = kind
		held = append(held, mpa)
		what = append(what, fmt.Sprintf("%s (of %s): %s", pod, mpa, kindText(kind)))
	}
	bad[0] = time.Now()
	l.corrupt.set(pods)
	err = sleepUntil(ctx, bad[0].Add(l.cfg.BadMetrics))
	l.corrupt.set(nil)
	bad[1] = time.Now()
	note = fmt.Sprintf("for %s one pod of each of %d MPAs exported bad metrics: %s; those MPAs must hold (no step from a round inside it), the others must go on stepping",
		l.cfg.BadMetrics, len(held), strings.Join(what, "; "))
	return held, bad, note, err
}

func kindText(kind string) string {
	switch kind {
	case "nan":
		return "memory working set NaN"
	case "inf":
		return "CPU counter +Inf"
	case "negative":
		return "memory working set negative"
	default:
		return "no series at all"
	}
}

// firstPod returns the name of the first pod (by name) of the MPA's
// target, found as the controller finds them (the scale subresource's
// selector).
func (l *lab) firstPod(ctx context.Context, mpa string) (string, error) {
	ns, name, _ := strings.Cut(mpa, "/")
	var m v1alpha1.MultidimPodAutoscaler
	if err := l.admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &m); err != nil {
		return "", err
	}
	_, scale, err := target.GetScale(ctx, l.admin, &m)
	if err != nil {
		return "", err
	}
	pods, err := target.Pods(ctx, l.admin, ns, scale.Status.Selector, false)
	if err != nil {
		return "", err
	}
	if len(pods) == 0 {
		return "", fmt.Errorf("%s: its target %s has no pods", mpa, m.Spec.ScaleTargetRef.Name)
	}
	return slices.MinFunc(pods, func(a, b corev1.Pod) int { return strings.Compare(a.Name, b.Name) }).Name, nil
}

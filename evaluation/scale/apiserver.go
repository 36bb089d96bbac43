package scale

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// The API server's request counter, by verb, resource and subresource.
const metricAPIRequests = "apiserver_request_total"

// writeVerbs are the verbs apiserver_request_total counts writes under.
var writeVerbs = []string{"POST", "PUT", "PATCH", "DELETE", "DELETECOLLECTION", "APPLY"}

// apiWrites reads the API server's write requests so far, by
// "resource[/subresource] VERB" (the whole cluster's: controller, agents,
// kube-controller-manager, scheduler, kwok), from its /metrics.
func apiWrites(ctx context.Context, rc *rest.Config) (map[string]float64, error) {
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("scale: the API server's metrics: %w", err)
	}
	raw, err := cs.Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("scale: the API server's metrics: %w", err)
	}
	return parseAPIWrites(bytes.NewReader(raw))
}

// parseAPIWrites sums apiserver_request_total's write verbs by resource,
// subresource and verb.
func parseAPIWrites(r io.Reader) (map[string]float64, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(r)
	if err != nil {
		return nil, fmt.Errorf("scale: the API server's metrics: %w", err)
	}
	out := map[string]float64{}
	f := fams[metricAPIRequests]
	if f == nil {
		return nil, fmt.Errorf("scale: the API server's metrics have no %s", metricAPIRequests)
	}
	for _, m := range f.GetMetric() {
		verb := labelValue(m, "verb")
		if !slices.Contains(writeVerbs, verb) {
			continue
		}
		res := labelValue(m, "resource")
		if sub := labelValue(m, "subresource"); sub != "" {
			res += "/" + sub
		}
		out[res+" "+verb] += m.GetCounter().GetValue()
	}
	return out, nil
}

// eventCounts counts the Events in the cluster by "component reason",
// with their repeats (an Event's count, or its series' count).
func eventCounts(ctx context.Context, c client.Reader) (map[string]float64, error) {
	out := map[string]float64{}
	opts := []client.ListOption{client.Limit(1000)}
	for {
		var l corev1.EventList
		if err := c.List(ctx, &l, opts...); err != nil {
			return nil, fmt.Errorf("scale: listing events: %w", err)
		}
		for i := range l.Items {
			countEvent(out, &l.Items[i])
		}
		if l.Continue == "" {
			return out, nil
		}
		opts = []client.ListOption{client.Limit(1000), client.Continue(l.Continue)}
	}
}

func countEvent(into map[string]float64, ev *corev1.Event) {
	who := cmp.Or(ev.ReportingController, ev.Source.Component, "?")
	n := max(ev.Count, 1)
	if ev.Series != nil {
		n = max(n, ev.Series.Count)
	}
	into[who+" "+ev.Reason] += float64(n)
}

package telemetry

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"
)

// podData is what the fake Prometheus reports for one pod with one
// container; NaN values are served as "NaN", missing ones (absent)
// not at all.
type podData struct {
	ns, pod, container                          string
	cpu, mem, peak, io, oom, cpuLimit, memLimit float64
	net, ready, received, processed, failed     float64
	buckets                                     []Bucket
	seen                                        [numExporters]time.Time // zero: no freshness sample
	absent                                      Metric
}

// fakeProm is a Prometheus HTTP API serving canned instant-query results,
// recognising the snapshot's queries by their exact text.
type fakeProm struct {
	srv    *httptest.Server
	names  map[string]string // query text → name
	bodies map[string][]byte // name → response
	mu     sync.Mutex
	calls  []map[string]string // form values of each call
	delay  time.Duration
}

// newFakeProm serves pods for the snapshot queries of window and matchers.
// fail maps query names to an error message to return instead.
func newFakeProm(tb testing.TB, window time.Duration, matchers []Matcher, pods []podData, fail map[string]string) *fakeProm {
	tb.Helper()
	f := &fakeProm{names: map[string]string{}, bodies: map[string][]byte{}}
	for _, q := range buildQueries(window, matchers) {
		f.names[q.text] = q.name
		if msg, ok := fail[q.name]; ok {
			f.bodies[q.name] = mustJSON(tb, map[string]any{"status": "error", "errorType": "execution", "error": msg})
			continue
		}
		f.bodies[q.name] = mustJSON(tb, map[string]any{"status": "success",
			"data": map[string]any{"resultType": "vector", "result": vectorFor(q, pods)}})
	}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	tb.Cleanup(f.srv.Close)
	return f
}

func mustJSON(tb testing.TB, v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

func (f *fakeProm) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/api/v1/query" {
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	if err := r.ParseForm(); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	f.calls = append(f.calls, map[string]string{"query": r.Form.Get("query"), "time": r.Form.Get("time"), "timeout": r.Form.Get("timeout")})
	f.mu.Unlock()
	if f.delay > 0 {
		time.Sleep(f.delay)
	}
	w.Header().Set("Content-Type", "application/json")
	name, ok := f.names[r.Form.Get("query")]
	if !ok {
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write([]byte(`{"status":"error","errorType":"bad_data","error":"unexpected query"}`))
		return
	}
	body := f.bodies[name]
	if status := errorStatus(body); status != 0 {
		w.WriteHeader(status)
	}
	_, _ = w.Write(body)
}

// errorStatus is 422 for an error body (what Prometheus answers for an
// execution error), else 0.
func errorStatus(body []byte) int {
	var b struct{ Status string }
	if json.Unmarshal(body, &b) == nil && b.Status == "error" {
		return http.StatusUnprocessableEntity
	}
	return 0
}

func (f *fakeProm) callCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.calls)
}

func value(v float64) string {
	switch {
	case math.IsNaN(v):
		return "NaN"
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

func leLabel(v float64) string {
	if math.IsInf(v, 1) {
		return "+Inf"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// vectorFor renders the pods' results for one query as Prometheus would.
func vectorFor(q query, pods []podData) []any {
	const ts = 1.7e9
	var out []any
	add := func(labels map[string]string, v float64) {
		out = append(out, map[string]any{"metric": labels, "value": []any{ts, value(v)}})
	}
	for _, p := range pods {
		if q.metric != 0 && p.absent&q.metric == q.metric {
			continue
		}
		c := map[string]string{"namespace": p.ns, "pod": p.pod, "container": p.container}
		pl := map[string]string{"namespace": p.ns, "pod": p.pod}
		switch q.name {
		case "cpu":
			add(c, p.cpu)
		case "memory":
			add(c, p.mem)
		case "memory_peak":
			add(c, p.peak)
		case "io":
			add(c, p.io)
		case "oom":
			add(c, p.oom)
		case "limits":
			if p.absent&MetricCPULimit == 0 {
				add(map[string]string{"namespace": p.ns, "pod": p.pod, "container": p.container, "resource": "cpu"}, p.cpuLimit)
			}
			if p.absent&MetricMemoryLimit == 0 {
				add(map[string]string{"namespace": p.ns, "pod": p.pod, "container": p.container, "resource": "memory"}, p.memLimit)
			}
		case "network":
			add(pl, p.net)
		case "ready":
			add(pl, p.ready)
		case "received":
			add(pl, p.received)
		case "processed":
			add(pl, p.processed)
		case "failed":
			add(pl, p.failed)
		case "latency":
			for _, b := range p.buckets {
				add(map[string]string{"namespace": p.ns, "pod": p.pod, "le": leLabel(b.UpperBound)}, b.Count)
			}
		case "freshness":
			for e, t := range p.seen {
				if !t.IsZero() {
					add(map[string]string{"namespace": p.ns, "pod": p.pod, "source": Exporter(e).String()}, float64(t.UnixMilli())/1000)
				}
			}
		default:
			panic(fmt.Sprintf("no fake data for query %s", q.name))
		}
	}
	if out == nil {
		out = []any{}
	}
	return out
}

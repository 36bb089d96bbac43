package telemetry

import (
	"errors"
	"fmt"
	"strings"
)

var (
	// ErrNoData means a metric has no usable sample for some pods: no
	// series, or a NaN, infinite or negative value. Check with errors.Is.
	ErrNoData = errors.New("no data")
	// ErrStale means some pods' newest samples from an exporter are older
	// than the snapshot's MaxAge, or the exporter no longer reports them.
	ErrStale = errors.New("stale data")
)

// maxPodsQuoted bounds the pods an error message lists.
const maxPodsQuoted = 5

// DataError says which metric (ErrNoData) or exporter (ErrStale) failed for
// which pods. Aggregate joins one per metric or exporter with errors.Join;
// errors.Is(err, ErrNoData) and errors.As(err, &*DataError) see each.
type DataError struct {
	Err       error    // ErrNoData or ErrStale
	Metric    Metric   // ErrNoData: the metric (0 when the pods have no series at all)
	Exporter  Exporter // ErrStale: the exporter
	Container string   // the container aggregated ("" for all containers)
	Pods      []PodKey
	Detail    string // why: "no series", "NaN, infinite or negative value", "newest sample 95s old", ...
}

func (e *DataError) Error() string {
	var b strings.Builder
	b.WriteString("telemetry: ")
	b.WriteString(e.Err.Error())
	switch {
	case errors.Is(e.Err, ErrStale):
		fmt.Fprintf(&b, " from %s", e.Exporter)
	case e.Metric != 0:
		fmt.Fprintf(&b, " for %s", e.Metric)
		if e.Container != "" && e.Metric&containerMetrics != 0 {
			fmt.Fprintf(&b, " of container %q", e.Container)
		}
	}
	if len(e.Pods) > 0 {
		fmt.Fprintf(&b, " (%d pods: %s)", len(e.Pods), quotePods(e.Pods))
	}
	if e.Detail != "" {
		b.WriteString(": ")
		b.WriteString(e.Detail)
	}
	return b.String()
}

// Unwrap returns ErrNoData or ErrStale.
func (e *DataError) Unwrap() error { return e.Err }

func quotePods(pods []PodKey) string {
	var b strings.Builder
	for i, p := range pods {
		if i == maxPodsQuoted {
			fmt.Fprintf(&b, " and %d more", len(pods)-i)
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(p.String())
	}
	return b.String()
}

// QueryError is a failed PromQL query, named as in Stats.
type QueryError struct {
	Name  string // "cpu", "latency", ...
	Query string // the PromQL text
	Err   error
}

func (e *QueryError) Error() string {
	return fmt.Sprintf("telemetry: query %s (%s): %v", e.Name, e.Query, e.Err)
}

func (e *QueryError) Unwrap() error { return e.Err }

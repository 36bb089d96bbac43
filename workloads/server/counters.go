package server

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// RequestCounters reads a server's request counters from its registry
// (Server.Registry): requests received, processed and failed, summed over
// their labels.
func RequestCounters(reg prometheus.Gatherer) (received, processed, failed float64, err error) {
	mfs, err := reg.Gather()
	if err != nil {
		return 0, 0, 0, fmt.Errorf("gather server metrics: %w", err)
	}
	found := 0
	for _, mf := range mfs {
		var dst *float64
		switch mf.GetName() {
		case "aware_workload_requests_received_total":
			dst = &received
		case "aware_workload_requests_processed_total":
			dst = &processed
		case "aware_workload_requests_failed_total":
			dst = &failed
		default:
			continue
		}
		found++
		for _, m := range mf.GetMetric() {
			*dst += m.GetCounter().GetValue()
		}
	}
	if found != 3 {
		return 0, 0, 0, errors.New("server metrics: request counters missing")
	}
	return received, processed, failed, nil
}

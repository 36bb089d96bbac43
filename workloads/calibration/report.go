package calibration

import (
	"fmt"
	"io"
	"text/tabwriter"
)

// Agreement tolerances for repeated runs (see Entry.Agrees): within 10 % of
// the median, or within 20 µs of CPU per request or 0.5 % of a core over the
// request's service time, whichever is looser.
const (
	AgreeRel  = 0.10
	AgreeAbs  = 20e-6
	AgreeIdle = 0.005
)

// Agreement counts the entries whose repeats agree (see Entry.Agrees).
func (p *Profile) Agreement() (agree, total int) {
	for _, e := range p.Entries {
		if len(e.CPUSecondsRepeats) < 2 {
			continue
		}
		total++
		if e.Agrees(AgreeRel, AgreeAbs, AgreeIdle) {
			agree++
		}
	}
	return agree, total
}

// WriteTable prints the profile as an aligned table followed by the repeat
// agreement summary.
func (p *Profile) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "segment\tsize\tunit\treqs\tcpu ms/req\tservices cpu ms/req\tsvc ms\tsvc cv\tp95 ms\talloc KiB\tws1 MiB\twsN MiB\tread KiB\twrite KiB\trepeats spread\tagree\t")
	for _, e := range p.Entries {
		agree := "-"
		if len(e.CPUSecondsRepeats) >= 2 {
			agree = "yes"
			if !e.Agrees(AgreeRel, AgreeAbs, AgreeIdle) {
				agree = "NO"
			}
		}
		services := "-"
		if e.ServiceCPUSeconds > 0 {
			services = fmt.Sprintf("%.3f", e.ServiceCPUSeconds*1e3)
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%d\t%.3f\t%s\t%.3f\t%.2f\t%.3f\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f%%\t%s\t\n",
			e.Segment, e.Size, e.Unit, e.Requests, e.CPUSeconds*1e3, services, e.ServiceMean*1e3, e.ServiceCV, e.ServiceP95*1e3,
			e.AllocBytes/1024, float64(e.WorkingSet1)/(1<<20), float64(e.WorkingSet)/(1<<20),
			e.ReadBytes/1024, e.WriteBytes/1024, 100*e.Spread(), agree)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	agree, total := p.Agreement()
	if total > 0 {
		_, err := fmt.Fprintf(w, "repeat agreement on CPU-seconds: %d of %d entries within %.0f%% (or %.0f µs, or %.1f%% of a core over the service time)\n",
			agree, total, AgreeRel*100, AgreeAbs*1e6, AgreeIdle*100)
		return err
	}
	return nil
}

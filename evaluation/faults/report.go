package faults

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
)

// Row is one fault's outcome.
type Row struct {
	Fault string
	// MPAs is how many MPAs the controller drove during the fault.
	MPAs int
	// Recorded is the trajectory steps the controller recorded between
	// the round before the fault and the end of its recovery; StepsLost
	// those of them missing from InfluxDB at the end.
	Recorded, StepsLost int
	// TrajectoriesLost counts episodes the controller abandoned because
	// the store was out of step, and episodes with a gap in InfluxDB.
	TrajectoriesLost int
	// Recovery is from the fault's revert until every MPA recorded a step
	// again (for InfluxDB: until the spool was delivered); 0 when nothing
	// needed recovering.
	Recovery time.Duration
	// WrongActions are steps recorded in rounds whose metrics window lay
	// wholly in a Prometheus outage (data that could only be stale).
	WrongActions int
	// Refused are the controller's requests the API server refused with
	// 403 Forbidden (from its audit log): a role that lacks a permission
	// the code uses. Those received while the API server was restarting
	// are left out (see Note).
	Refused int
	// Crashes are controller exits the suite did not cause.
	Crashes int
	// Note says what was injected and what else was checked.
	Note string
	// Failed says what broke the expectation (nothing lost, no crash, no
	// wrong action), "" if nothing.
	Failed string
}

// Report is a run's rows and settings.
type Report struct {
	MPAs    int
	Step    time.Duration
	Started time.Time
	Took    time.Duration
	Rows    []Row
}

// Err is nil when every row met the expectation.
func (r Report) Err() error {
	var errs []error
	for _, row := range r.Rows {
		if row.Failed != "" {
			errs = append(errs, fmt.Errorf("%s: %s", row.Fault, row.Failed))
		}
	}
	return errors.Join(errs...)
}

// WriteTable writes the rows as a Markdown table with the notes below.
func WriteTable(w io.Writer, r Report) error {
	var b strings.Builder
	fmt.Fprintf(&b, "| fault | MPAs | steps recorded | steps lost | trajectories lost | recovery | wrong actions | refused requests | crashes | result |\n")
	fmt.Fprintf(&b, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|\n")
	for _, row := range r.Rows {
		rec := "–"
		if row.Recovery > 0 {
			rec = row.Recovery.Round(100 * time.Millisecond).String()
		}
		result := "ok"
		if row.Failed != "" {
			result = "**FAILED**: " + row.Failed
		}
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %d | %s | %d | %d | %d | %s |\n", row.Fault, row.MPAs, row.Recorded, row.StepsLost,
			row.TrajectoriesLost, rec, row.WrongActions, row.Refused, row.Crashes, result)
	}
	b.WriteString("\n")
	for _, row := range r.Rows {
		if row.Note != "" {
			fmt.Fprintf(&b, "- **%s**: %s\n", row.Fault, row.Note)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

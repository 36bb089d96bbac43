package calibration

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// EnvServicePIDs names the environment variable through which a parent that
// started the external services (database, object store) tells a measuring
// child their process IDs, comma-separated, so that the child can meter
// what a segment costs the services (Options.Services).
const EnvServicePIDs = "AWARE_SERVICE_PIDS"

// ServiceMeter reads the CPU time the external services have used so far.
type ServiceMeter func() (time.Duration, error)

// ParsePIDs parses a comma-separated list of process IDs (EnvServicePIDs).
func ParsePIDs(s string) ([]int, error) {
	var pids []int
	for f := range strings.SplitSeq(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		pid, err := strconv.Atoi(f)
		if err != nil || pid <= 0 {
			return nil, fmt.Errorf("process ID %q: not a positive integer", f)
		}
		pids = append(pids, pid)
	}
	return pids, nil
}

// ProcessTrees meters the processes roots and all their descendants: user
// plus system time of every live process in the trees, plus what the roots
// hold for their reaped children (a PostgreSQL backend that exited is
// counted by its postmaster). It reads /proc, so it works on Linux only.
func ProcessTrees(roots []int) ServiceMeter {
	return func() (time.Duration, error) {
		return treesCPU("/proc", roots)
	}
}

// procStat is the part of /proc/<pid>/stat a meter needs, in clock ticks.
type procStat struct {
	ppid           int
	utime, stime   float64
	cutime, cstime float64
}

// clockTicks is USER_HZ, 100 on every Linux architecture Go supports.
const clockTicks = 100

func treesCPU(proc string, roots []int) (time.Duration, error) {
	ents, err := os.ReadDir(proc)
	if err != nil {
		return 0, fmt.Errorf("service CPU: %w", err)
	}
	stats := map[int]procStat{}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(fmt.Sprintf("%s/%d/stat", proc, pid))
		if err != nil {
			continue // exited since the listing
		}
		st, err := parseStat(string(b))
		if err != nil {
			return 0, fmt.Errorf("service CPU: %s/%d/stat: %w", proc, pid, err)
		}
		stats[pid] = st
	}
	in := map[int]bool{}
	for _, r := range roots {
		if _, ok := stats[r]; !ok {
			return 0, fmt.Errorf("service CPU: process %d: not running", r)
		}
		in[r] = true
	}
	// Descendants: repeat until no process joins (trees are shallow).
	for grew := true; grew; {
		grew = false
		for pid, st := range stats {
			if !in[pid] && in[st.ppid] {
				in[pid], grew = true, true
			}
		}
	}
	var ticks float64
	for pid := range in {
		st := stats[pid]
		ticks += st.utime + st.stime
	}
	for _, r := range roots {
		ticks += stats[r].cutime + stats[r].cstime
	}
	return time.Duration(ticks / clockTicks * float64(time.Second)), nil
}

// parseStat reads the fields after the command name, which is in
// parentheses and may hold spaces and parentheses.
func parseStat(s string) (procStat, error) {
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return procStat{}, fmt.Errorf("no command field")
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 15 {
		return procStat{}, fmt.Errorf("%d fields after the command, want at least 15", len(f))
	}
	var st procStat
	var err error
	if st.ppid, err = strconv.Atoi(f[1]); err != nil {
		return procStat{}, fmt.Errorf("ppid: %w", err)
	}
	for j, dst := range []*float64{&st.utime, &st.stime, &st.cutime, &st.cstime} {
		if *dst, err = strconv.ParseFloat(f[11+j], 64); err != nil {
			return procStat{}, fmt.Errorf("field %d: %w", 14+j, err)
		}
	}
	return st, nil
}

// MeterFromEnv meters the services whose process IDs env (the childEnv of
// Services, or this process's environment when nil) names in
// EnvServicePIDs, or returns nil when it names none: services reached
// through the environment run elsewhere and cannot be metered.
func MeterFromEnv(env []string) (ServiceMeter, error) {
	v := os.Getenv(EnvServicePIDs)
	if env != nil {
		v = ""
		for _, kv := range env {
			if k, val, ok := strings.Cut(kv, "="); ok && k == EnvServicePIDs {
				v = val
			}
		}
	}
	pids, err := ParsePIDs(v)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", EnvServicePIDs, err)
	}
	if len(pids) == 0 {
		return nil, nil
	}
	return ProcessTrees(pids), nil
}

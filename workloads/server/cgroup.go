package server

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// CPULimit is the CPU limit of this process's cgroup.
type CPULimit struct {
	// File is the cgroup file the limit was read from.
	File string
	// Raw is the file's content, e.g. "200000 100000" or "max 100000".
	Raw string
	// Cores is quota/period, or 0 when unlimited.
	Cores float64
}

// String renders the limit as "1.5 cores" or "unlimited".
func (l CPULimit) String() string {
	if l.Cores == 0 {
		return "unlimited"
	}
	return strconv.FormatFloat(l.Cores, 'g', 4, 64) + " cores"
}

// ParseCPUMax parses a cgroup v2 cpu.max line ("$MAX $PERIOD", MAX may be
// "max") into cores (0 when unlimited).
func ParseCPUMax(s string) (float64, error) {
	f := strings.Fields(s)
	if len(f) != 2 {
		return 0, fmt.Errorf("cpu.max %q: want two fields \"$MAX $PERIOD\"", s)
	}
	period, err := strconv.ParseUint(f[1], 10, 64)
	if err != nil || period == 0 {
		return 0, fmt.Errorf("cpu.max %q: period %q is not a positive integer", s, f[1])
	}
	if f[0] == "max" {
		return 0, nil
	}
	quota, err := strconv.ParseUint(f[0], 10, 64)
	if err != nil || quota == 0 {
		return 0, fmt.Errorf("cpu.max %q: quota %q is neither \"max\" nor a positive integer", s, f[0])
	}
	return float64(quota) / float64(period), nil
}

// ReadCPULimit reads this process's cgroup CPU limit: cgroup v2 cpu.max of
// the process's own cgroup (from /proc/self/cgroup), falling back to the
// cgroup root, then to cgroup v1 cfs quota and period.
func ReadCPULimit() (CPULimit, error) {
	return readCPULimit("/proc/self/cgroup", "/sys/fs/cgroup")
}

func readCPULimit(selfCgroup, root string) (CPULimit, error) {
	var candidates []string
	if data, err := os.ReadFile(selfCgroup); err == nil {
		sc := bufio.NewScanner(bytes.NewReader(data))
		for sc.Scan() {
			if p, ok := strings.CutPrefix(sc.Text(), "0::"); ok && p != "/" {
				candidates = append(candidates, filepath.Join(root, filepath.Clean("/"+p), "cpu.max"))
			}
		}
	}
	candidates = append(candidates, filepath.Join(root, "cpu.max"))
	for _, f := range candidates {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		raw := strings.TrimSpace(string(data))
		cores, err := ParseCPUMax(raw)
		if err != nil {
			return CPULimit{}, fmt.Errorf("%s: %w", f, err)
		}
		return CPULimit{File: f, Raw: raw, Cores: cores}, nil
	}
	return readCPULimitV1(filepath.Join(root, "cpu"))
}

func readCPULimitV1(dir string) (CPULimit, error) {
	qf, pf := filepath.Join(dir, "cpu.cfs_quota_us"), filepath.Join(dir, "cpu.cfs_period_us")
	q, qerr := os.ReadFile(qf)
	p, perr := os.ReadFile(pf)
	if qerr != nil || perr != nil {
		return CPULimit{}, errors.New("no cgroup v2 cpu.max nor v1 cpu.cfs_quota_us found")
	}
	raw := strings.TrimSpace(string(q)) + " " + strings.TrimSpace(string(p))
	quota, err := strconv.ParseInt(strings.TrimSpace(string(q)), 10, 64)
	if err != nil {
		return CPULimit{}, fmt.Errorf("%s: %w", qf, err)
	}
	if quota < 0 { // -1: unlimited
		return CPULimit{File: qf, Raw: raw}, nil
	}
	cores, err := ParseCPUMax(raw)
	if err != nil {
		return CPULimit{}, fmt.Errorf("%s: %w", qf, err)
	}
	return CPULimit{File: qf, Raw: raw, Cores: cores}, nil
}

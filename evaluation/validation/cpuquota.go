package validation

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// cpuQuota is a cgroup that limits a process's CPU like a container's CPU
// limit: CFS bandwidth of cores × 100 ms per 100 ms period.
type cpuQuota struct {
	dir  string
	desc string
}

// limitCPU puts pid into a new cgroup with a CPU quota of cores, under
// cgroup v2 (cpu.max) or v1 (cpu.cfs_quota_us). When the machine allows
// neither, it returns a nil quota and the reason. Under cgroup v2 the same
// cgroup also confines pid to place's server CPUs (under v1 the cpuset is
// another hierarchy: Placement.pin).
func limitCPU(pid int, cores float64, name string, place *Placement) (*cpuQuota, string) {
	quota := int64(cores * 100000)
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		files := []string{"cpu.max", fmt.Sprintf("%d 100000", quota)}
		if place != nil && place.v2 {
			files = append(files, place.pinFiles()...)
		}
		q, err := makeCgroup("/sys/fs/cgroup", name, files, pid)
		if err == nil {
			q.desc = fmt.Sprintf("cgroup v2 cpu.max %d/100000", quota)
			return q, q.desc
		}
		return nil, "GOMAXPROCS only (cgroup v2: " + err.Error() + ")"
	}
	q, err := makeCgroup("/sys/fs/cgroup/cpu", name, []string{"cpu.cfs_period_us", "100000", "cpu.cfs_quota_us", strconv.FormatInt(quota, 10)}, pid)
	if err != nil {
		return nil, "GOMAXPROCS only (cgroup v1: " + err.Error() + ")"
	}
	q.desc = fmt.Sprintf("cgroup v1 cfs %d/100000", quota)
	return q, q.desc
}

// makeCgroup creates the cgroup root/name, writes files (name, value
// pairs, in order) into it and moves pid's process into it.
func makeCgroup(root, name string, files []string, pid int) (*cpuQuota, error) {
	dir := filepath.Join(root, name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, err
	}
	q := &cpuQuota{dir: dir}
	for i := 0; i+1 < len(files); i += 2 {
		f, v := files[i], files[i+1]
		if err := os.WriteFile(filepath.Join(dir, f), []byte(v), 0o644); err != nil {
			q.remove()
			return nil, fmt.Errorf("write %s: %w", f, err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0o644); err != nil {
		q.remove()
		return nil, fmt.Errorf("move pid %d: %w", pid, err)
	}
	return q, nil
}

// remove deletes the cgroup once its processes have exited.
func (q *cpuQuota) remove() error {
	if q == nil {
		return nil
	}
	if err := os.Remove(q.dir); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove cgroup %s: %w", q.dir, err)
	}
	return nil
}

// processCPU returns the CPU-seconds (user + system) pid has used, from
// /proc/<pid>/stat.
func processCPU(pid int) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	s := string(b)
	// Fields after the command name, which is in parentheses and may hold spaces.
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: no command field", pid)
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f))
	}
	ut, err1 := strconv.ParseFloat(f[11], 64)
	st, err2 := strconv.ParseFloat(f[12], 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, fmt.Errorf("/proc/%d/stat: %w", pid, err)
	}
	return (ut + st) / clockTicks, nil
}

// selfCPU is this process's user + system CPU-seconds so far (its
// children's not included).
func selfCPU() (float64, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, fmt.Errorf("getrusage: %w", err)
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9, nil
}

// clockTicks is USER_HZ, 100 on every Linux architecture Go supports.
const clockTicks = 100

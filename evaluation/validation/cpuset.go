package validation

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Placement keeps the workload server off the CPUs that the rest of a
// validation uses: on a cluster a pod does not share its cores with its load
// generator, its database or its object store, which run on other nodes.
// Without it, at 1000+ requests per second the load generator and
// PostgreSQL take CPU time from the server's cores whatever its quota, and
// the server's tail latency measures the neighbours.
//
// Place moves the calling process (the load generator) and so every child it
// starts later (the services) into a cpuset of the first CPUs; Real moves
// each workload server into a cpuset of the last ones.
type Placement struct {
	// Server and Rest are the CPU lists ("1", "2-3") of the workload server
	// and of everything else; empty when the machine does not allow pinning.
	Server, Rest string
	// Desc says how processes were placed, or why they were not.
	Desc string

	root string // the cpuset hierarchy (v1) or the unified one (v2)
	v2   bool
	mems string // cpuset.mems of the hierarchy's root (v1)
	rest string // the cgroup the calling process was moved into
}

// Place reserves the last ceil(serverCores) CPUs for workload servers and
// moves the calling process to the others. It never fails: when the machine
// has too few CPUs or no writable cpuset controller, it returns a Placement
// that pins nothing and says why.
func Place(serverCores float64, name string) *Placement {
	// Cgroups of validations that were killed before they could remove
	// theirs (SIGKILL) are empty now: remove them.
	for _, root := range []string{"/sys/fs/cgroup", "/sys/fs/cgroup/cpuset", "/sys/fs/cgroup/cpu"} {
		sweepStale(root, "aware-validate-", processAlive)
	}
	p := &Placement{}
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		p.root, p.v2 = "/sys/fs/cgroup", true
		ctl, err := os.ReadFile(filepath.Join(p.root, "cgroup.subtree_control"))
		if err != nil || !slices.Contains(strings.Fields(string(ctl)), "cpuset") {
			p.Desc = "shared CPUs (cgroup v2 without the cpuset controller)"
			return p
		}
	} else {
		p.root = "/sys/fs/cgroup/cpuset"
	}
	cpusFile := "cpuset.cpus"
	if p.v2 {
		cpusFile = "cpuset.cpus.effective"
	}
	b, err := os.ReadFile(filepath.Join(p.root, cpusFile))
	if err != nil {
		p.Desc = "shared CPUs (" + err.Error() + ")"
		return p
	}
	cpus, err := parseCPUList(strings.TrimSpace(string(b)))
	if err != nil {
		p.Desc = fmt.Sprintf("shared CPUs (%s: %v)", cpusFile, err)
		return p
	}
	k := max(1, int(serverCores+1-1e-9))
	if len(cpus) <= k {
		p.Desc = fmt.Sprintf("shared CPUs (%d CPUs, the server needs %d and the rest at least one)", len(cpus), k)
		return p
	}
	server, rest := formatCPUList(cpus[len(cpus)-k:]), formatCPUList(cpus[:len(cpus)-k])
	files := []string{"cpuset.cpus", rest}
	if !p.v2 {
		mems, err := os.ReadFile(filepath.Join(p.root, "cpuset.mems"))
		if err != nil {
			p.Desc = "shared CPUs (" + err.Error() + ")"
			return p
		}
		p.mems = strings.TrimSpace(string(mems))
		files = append(files, "cpuset.mems", p.mems)
	}
	g, err := makeCgroup(p.root, name+"-rest", files, os.Getpid())
	if err != nil {
		p.Desc = "shared CPUs (" + err.Error() + ")"
		return p
	}
	p.rest, p.Server, p.Rest = g.dir, server, rest
	p.Desc = fmt.Sprintf("server on CPU %s, load generator and services on CPU %s", server, rest)
	return p
}

// sweepStale removes the cgroups under root named prefix<pid>-… whose
// process pid has exited (alive reports whether it runs). A cgroup that
// still holds processes is not removable and stays.
func sweepStale(root, prefix string, alive func(pid int) bool) {
	ents, err := os.ReadDir(root)
	if err != nil {
		return
	}
	for _, e := range ents {
		rest, ok := strings.CutPrefix(e.Name(), prefix)
		if !ok || !e.IsDir() {
			continue
		}
		pidStr, _, _ := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidStr)
		if err != nil || pid <= 0 || alive(pid) {
			continue
		}
		_ = os.Remove(filepath.Join(root, e.Name()))
	}
}

// processAlive reports whether process pid exists.
func processAlive(pid int) bool {
	_, err := os.Stat(fmt.Sprintf("/proc/%d", pid))
	return err == nil
}

// RestCPUs is the number of CPUs the load generator and the services run
// on, or 0 when p pins nothing.
func (p *Placement) RestCPUs() int {
	if p == nil || p.Rest == "" {
		return 0
	}
	cpus, err := parseCPUList(p.Rest)
	if err != nil {
		return 0
	}
	return len(cpus)
}

// pinFiles are the cgroup files that confine a server to p.Server in a
// cgroup of the cpuset hierarchy; nil when p pins nothing.
func (p *Placement) pinFiles() []string {
	if p == nil || p.Server == "" {
		return nil
	}
	if p.v2 {
		return []string{"cpuset.cpus", p.Server}
	}
	return []string{"cpuset.cpus", p.Server, "cpuset.mems", p.mems}
}

// pin moves pid into a new v1 cpuset cgroup of the server's CPUs. Under
// cgroup v2 the quota's cgroup carries the cpuset (limitCPU), so pin does
// nothing there.
func (p *Placement) pin(pid int, name string) (*cpuQuota, error) {
	files := p.pinFiles()
	if files == nil || p.v2 {
		return nil, nil
	}
	return makeCgroup(p.root, name, files, pid)
}

// Release moves the calling process back to the hierarchy's root cgroup and
// removes the cgroup Place made.
func (p *Placement) Release() error {
	if p == nil || p.rest == "" {
		return nil
	}
	if err := os.WriteFile(filepath.Join(p.root, "cgroup.procs"), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		return fmt.Errorf("move back to %s: %w", p.root, err)
	}
	// The services' processes may still be exiting; the directory goes when
	// they have.
	if err := os.Remove(p.rest); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove cgroup %s: %w", p.rest, err)
	}
	p.rest = ""
	return nil
}

// parseCPUList parses a kernel CPU list such as "0-3,6,8-9".
func parseCPUList(s string) ([]int, error) {
	var cpus []int
	for part := range strings.SplitSeq(s, ",") {
		if part == "" {
			continue
		}
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			return nil, fmt.Errorf("CPU list %q: %q is not a CPU number", s, lo)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a {
				return nil, fmt.Errorf("CPU list %q: %q is not a range", s, part)
			}
		}
		for c := a; c <= b; c++ {
			cpus = append(cpus, c)
		}
	}
	if len(cpus) == 0 {
		return nil, fmt.Errorf("CPU list %q is empty", s)
	}
	return cpus, nil
}

// formatCPUList writes cpus (ascending) as a kernel CPU list.
func formatCPUList(cpus []int) string {
	var parts []string
	for i := 0; i < len(cpus); {
		j := i
		for j+1 < len(cpus) && cpus[j+1] == cpus[j]+1 {
			j++
		}
		if i == j {
			parts = append(parts, strconv.Itoa(cpus[i]))
		} else {
			parts = append(parts, fmt.Sprintf("%d-%d", cpus[i], cpus[j]))
		}
		i = j + 1
	}
	return strings.Join(parts, ",")
}

package scale

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// userHZ is the unit of the CPU times in /proc/<pid>/stat: clock ticks of
// USER_HZ, which Linux fixes at 100 per second on every architecture
// (sysconf(_SC_CLK_TCK); the kernel converts from its internal HZ).
const userHZ = 100

// procStat is what the benchmark reads from /proc/<pid>/stat.
type procStat struct {
	comm string
	ppid int
	// cpu is the user + system time the process has used.
	cpu time.Duration
}

// procCPU reads the CPU time (user + system) pid has used and its command
// name.
func procCPU(pid int) (string, time.Duration, error) {
	st, err := readStat(pid)
	return st.comm, st.cpu, err
}

func readStat(pid int) (procStat, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return procStat{}, err
	}
	return parseStat(b)
}

// parseStat parses /proc/<pid>/stat: "pid (comm) state ppid …" where utime
// and stime are fields 14 and 15 (1-based), in USER_HZ ticks. comm may hold
// spaces and parentheses, so the fields start after the last ')'.
func parseStat(b []byte) (procStat, error) {
	open, end := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
	if open < 0 || end < open {
		return procStat{}, fmt.Errorf("/proc stat %q: no (comm)", truncate(b))
	}
	st := procStat{comm: string(b[open+1 : end])}
	fields := strings.Fields(string(b[end+1:]))
	// fields[0] is field 3 (state), fields[1] field 4 (ppid): utime (14)
	// is fields[11], stime (15) fields[12].
	if len(fields) < 13 {
		return procStat{}, fmt.Errorf("/proc stat %q: %d fields after comm, want at least 13", truncate(b), len(fields))
	}
	ppid, err := strconv.Atoi(fields[1])
	if err != nil {
		return procStat{}, fmt.Errorf("/proc stat %q: ppid: %w", truncate(b), err)
	}
	st.ppid = ppid
	var ticks uint64
	for _, f := range fields[11:13] {
		v, err := strconv.ParseUint(f, 10, 64)
		if err != nil {
			return procStat{}, fmt.Errorf("/proc stat %q: utime/stime: %w", truncate(b), err)
		}
		ticks += v
	}
	st.cpu = time.Duration(ticks) * (time.Second / userHZ)
	return st, nil
}

// children lists the processes whose parent is pid, by pid.
func children(pid int) (map[int]procStat, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	out := map[int]procStat{}
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		st, err := readStat(child)
		if err != nil {
			continue // exited meanwhile
		}
		if st.ppid == pid {
			out[child] = st
		}
	}
	return out, nil
}

// hostCPU reads the machine's CPU time from /proc/stat's "cpu" line (USER_HZ
// ticks of all CPUs): busy is user, nice, system, irq and softirq; all adds
// idle, iowait and steal (guest time is already in user).
func hostCPU() (busy, all time.Duration, err error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0, err
	}
	return parseHostStat(b)
}

func parseHostStat(b []byte) (busy, all time.Duration, err error) {
	line, _, _ := bytes.Cut(b, []byte("\n"))
	f := strings.Fields(string(line))
	if len(f) < 9 || f[0] != "cpu" {
		return 0, 0, fmt.Errorf("/proc/stat %q: want \"cpu user nice system idle iowait irq softirq steal …\"", truncate(line))
	}
	var v [8]uint64
	for i := range v {
		if v[i], err = strconv.ParseUint(f[i+1], 10, 64); err != nil {
			return 0, 0, fmt.Errorf("/proc/stat %q: %w", truncate(line), err)
		}
	}
	tick := time.Second / userHZ
	busyTicks := v[0] + v[1] + v[2] + v[5] + v[6]
	return time.Duration(busyTicks) * tick, time.Duration(busyTicks+v[3]+v[4]+v[7]) * tick, nil
}

// pressureStall reads the time some task waited for resource ("cpu" or
// "io") from /proc/pressure/<resource> (the kernel's pressure stall
// information); ok is false when the kernel has none.
func pressureStall(resource string) (some time.Duration, ok bool, err error) {
	b, err := os.ReadFile("/proc/pressure/" + resource)
	if errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.EOPNOTSUPP) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	some, err = parsePressure(b)
	if err != nil {
		return 0, false, fmt.Errorf("/proc/pressure/%s: %w", resource, err)
	}
	return some, true, nil
}

// parsePressure returns the "some" line's total (microseconds).
func parsePressure(b []byte) (time.Duration, error) {
	for line := range strings.Lines(string(b)) {
		f := strings.Fields(line)
		if len(f) == 0 || f[0] != "some" {
			continue
		}
		for _, kv := range f[1:] {
			if v, ok := strings.CutPrefix(kv, "total="); ok {
				us, err := strconv.ParseUint(v, 10, 64)
				if err != nil {
					return 0, fmt.Errorf("%q: %w", truncate([]byte(line)), err)
				}
				return time.Duration(us) * time.Microsecond, nil
			}
		}
		return 0, fmt.Errorf("%q: no total=", truncate([]byte(line)))
	}
	return 0, fmt.Errorf("%q: no \"some\" line", truncate(b))
}

// memory is a process's resident set size now and its peak, in bytes.
type memory struct{ RSS, HWM uint64 }

// procMemory reads VmRSS and VmHWM of pid.
func procMemory(pid int) (memory, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return memory{}, err
	}
	return parseStatus(b)
}

// parseStatus reads VmRSS and VmHWM ("VmRSS:\t  123456 kB") from
// /proc/<pid>/status.
func parseStatus(b []byte) (memory, error) {
	var m memory
	found := 0
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		key, val, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		var dst *uint64
		switch key {
		case "VmRSS":
			dst = &m.RSS
		case "VmHWM":
			dst = &m.HWM
		default:
			continue
		}
		f := strings.Fields(val)
		if len(f) != 2 || f[1] != "kB" {
			return memory{}, fmt.Errorf("/proc status %s: %q, want \"N kB\"", key, strings.TrimSpace(val))
		}
		kb, err := strconv.ParseUint(f[0], 10, 64)
		if err != nil {
			return memory{}, fmt.Errorf("/proc status %s: %w", key, err)
		}
		*dst = kb << 10
		found++
	}
	if found != 2 {
		return memory{}, fmt.Errorf("/proc status: VmRSS or VmHWM missing (a kernel thread or a zombie?)")
	}
	return m, nil
}

func truncate(b []byte) string {
	if len(b) > 80 {
		return string(b[:80]) + "…"
	}
	return string(b)
}

package calibration

import (
	"bytes"
	"fmt"
	"os"
	"runtime/metrics"
	"strconv"
	"syscall"
	"time"
)

// counters is a snapshot of the process's resource counters.
type counters struct {
	cpu        time.Duration // user + system
	rchar      int64
	wchar      int64
	allocBytes uint64
}

func (c counters) sub(o counters) counters {
	return counters{cpu: c.cpu - o.cpu, rchar: c.rchar - o.rchar, wchar: c.wchar - o.wchar, allocBytes: c.allocBytes - o.allocBytes}
}

func (c *counters) add(o counters) {
	c.cpu += o.cpu
	c.rchar += o.rchar
	c.wchar += o.wchar
	c.allocBytes += o.allocBytes
}

var allocSample = []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}

func readCounters() (counters, error) {
	var c counters
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return c, fmt.Errorf("getrusage: %w", err)
	}
	c.cpu = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	io, err := os.ReadFile("/proc/self/io")
	if err != nil {
		return c, fmt.Errorf("read /proc/self/io: %w", err)
	}
	if c.rchar, err = ioField(io, "rchar"); err != nil {
		return c, err
	}
	if c.wchar, err = ioField(io, "wchar"); err != nil {
		return c, err
	}
	metrics.Read(allocSample)
	c.allocBytes = allocSample[0].Value.Uint64()
	return c, nil
}

func ioField(data []byte, key string) (int64, error) {
	for _, line := range bytes.Split(data, []byte("\n")) {
		k, v, ok := bytes.Cut(line, []byte(":"))
		if ok && string(k) == key {
			return strconv.ParseInt(string(bytes.TrimSpace(v)), 10, 64)
		}
	}
	return 0, fmt.Errorf("/proc/self/io: no %q field", key)
}

var pageSize = int64(os.Getpagesize())

// rss returns the process's resident set size in bytes (/proc/self/statm).
func rss() (int64, error) {
	data, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0, fmt.Errorf("read /proc/self/statm: %w", err)
	}
	f := bytes.Fields(data)
	if len(f) < 2 {
		return 0, fmt.Errorf("/proc/self/statm: unexpected %q", data)
	}
	pages, err := strconv.ParseInt(string(f[1]), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("/proc/self/statm: %w", err)
	}
	return pages * pageSize, nil
}

package validation

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"time"
)

// MemoryVmRSS names the real memory figure: the server process's resident
// set (VmRSS of /proc/<pid>/status: anonymous, file-backed and shared pages
// it has mapped and touched), the figure calibration's working sets are
// measured in.
const MemoryVmRSS = "VmRSS"

// processRSS returns pid's resident set in bytes (VmRSS of
// /proc/<pid>/status).
func processRSS(pid int) (float64, error) {
	path := fmt.Sprintf("/proc/%d/status", pid)
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		rest, ok := bytes.CutPrefix(sc.Bytes(), []byte("VmRSS:"))
		if !ok {
			continue
		}
		f := bytes.Fields(rest)
		if len(f) != 2 || string(f[1]) != "kB" {
			return 0, fmt.Errorf("%s: VmRSS: unexpected %q", path, rest)
		}
		kb, err := strconv.ParseFloat(string(f[0]), 64)
		if err != nil {
			return 0, fmt.Errorf("%s: VmRSS: %w", path, err)
		}
		return kb * 1024, nil
	}
	return 0, fmt.Errorf("%s: no VmRSS line", path)
}

// rssSampler samples a process's resident set at a fixed interval, from
// when it starts until mean stops it.
type rssSampler struct {
	stop chan struct{}
	done chan struct{}
	sum  float64
	n    int
	err  error
}

// sampleRSS starts sampling pid's VmRSS now and every interval after.
func sampleRSS(pid int, every time.Duration) *rssSampler {
	s := &rssSampler{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			v, err := processRSS(pid)
			if err != nil {
				s.err = err
				return
			}
			s.sum += v
			s.n++
			select {
			case <-s.stop:
				return
			case <-tick.C:
			}
		}
	}()
	return s
}

// mean stops sampling (after one last sample) and returns the mean resident
// set in bytes.
func (s *rssSampler) mean() (float64, error) {
	close(s.stop)
	<-s.done
	if s.err != nil {
		return 0, s.err
	}
	return s.sum / float64(s.n), nil
}

package scale

import (
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseStat(t *testing.T) {
	// Fields after comm: state ppid pgrp session tty tpgid flags minflt
	// cminflt majflt cmajflt utime stime …
	for _, tc := range []struct {
		name, in string
		comm     string
		ppid     int
		cpu      time.Duration
		err      string
	}{
		{name: "plain", in: "4242 (aware) S 1 4242 4242 0 -1 4194560 1000 0 0 0 250 50 0 0 20 0 12 0 100 0 0",
			comm: "aware", ppid: 1, cpu: 3 * time.Second},
		{name: "comm with spaces and parentheses", in: "7 (a (b) c) R 1 7 7 0 -1 0 0 0 0 0 1 2 0 0 20 0 1 0",
			comm: "a (b) c", ppid: 1, cpu: 30 * time.Millisecond},
		{name: "go wrapper", in: "9 (go) S 77 9 9 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0", comm: "go", ppid: 77},
		{name: "bad ppid", in: "1 (x) S y 1 1 0 -1 0 0 0 0 0 1 1 0", err: "ppid"},
		{name: "no comm", in: "1 aware S 1", err: "no (comm)"},
		{name: "too short", in: "1 (x) S 1 2 3", err: "want at least 13"},
		{name: "not a number", in: "1 (x) S 1 1 1 0 -1 0 0 0 0 0 abc 1 0", err: "utime/stime"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, err := parseStat([]byte(tc.in))
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.comm, st.comm)
			assert.Equal(t, tc.ppid, st.ppid)
			assert.Equal(t, tc.cpu, st.cpu)
		})
	}
}

func TestParseStatus(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     memory
		err      string
	}{
		{name: "both", in: "Name:\taware\nVmPeak:\t 900 kB\nVmHWM:\t  2048 kB\nVmRSS:\t  1024 kB\nThreads:\t9\n",
			want: memory{RSS: 1 << 20, HWM: 2 << 20}},
		{name: "kernel thread", in: "Name:\tkthreadd\nThreads:\t1\n", err: "missing"},
		{name: "bad unit", in: "VmHWM:\t1 MB\nVmRSS:\t1 kB\n", err: `VmHWM: "1 MB"`},
		{name: "bad number", in: "VmHWM:\tx kB\nVmRSS:\t1 kB\n", err: "VmHWM"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseStatus([]byte(tc.in))
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

// TestProcOfThisProcess reads this test process's own /proc files.
func TestProcOfThisProcess(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc")
	}
	_, before, err := procCPU(os.Getpid())
	require.NoError(t, err)
	deadline := time.Now().Add(300 * time.Millisecond)
	x := 0
	for time.Now().Before(deadline) { // burn CPU time
		x++
	}
	_, after, err := procCPU(os.Getpid())
	require.NoError(t, err)
	assert.Greater(t, after, before, "CPU time grows while spinning (%d loops)", x)
	mem, err := procMemory(os.Getpid())
	require.NoError(t, err)
	assert.Positive(t, mem.RSS)
	assert.GreaterOrEqual(t, mem.HWM, mem.RSS)
	_, _, err = procCPU(-1)
	assert.Error(t, err)

	// A child of this process is listed as such.
	cmd := exec.Command("sleep", "5")
	require.NoError(t, cmd.Start())
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	kids, err := children(os.Getpid())
	require.NoError(t, err)
	require.Contains(t, kids, cmd.Process.Pid)
	assert.Equal(t, "sleep", kids[cmd.Process.Pid].comm)

	busy, all, err := hostCPU()
	require.NoError(t, err)
	assert.Positive(t, busy)
	assert.Greater(t, all, busy)
}

func TestParsePressure(t *testing.T) {
	some, err := parsePressure([]byte("some avg10=60.19 avg60=39.33 avg300=26.23 total=1310253870\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n"))
	require.NoError(t, err)
	assert.Equal(t, 1310253870*time.Microsecond, some)
	for _, tc := range []struct{ in, want string }{
		{"", `no "some" line`},
		{"full avg10=0 total=5\n", `no "some" line`},
		{"some avg10=1.0\n", "no total="},
		{"some total=x\n", `"some total=x\n": strconv.ParseUint`},
	} {
		_, err := parsePressure([]byte(tc.in))
		assert.ErrorContains(t, err, tc.want, "%q", tc.in)
	}
	// The machine's own, where it has one.
	if _, ok, err := pressureStall("cpu"); ok {
		assert.NoError(t, err)
	}
}

func TestParseHostStat(t *testing.T) {
	busy, all, err := parseHostStat([]byte("cpu  1000 10 200 5000 30 5 7 40 0 0\ncpu0 1 2 3 4 5 6 7 8 0 0\n"))
	require.NoError(t, err)
	assert.Equal(t, 12220*time.Millisecond, busy) // (1000+10+200+5+7) ticks of 10 ms
	assert.Equal(t, 62920*time.Millisecond, all)  // + idle 5000, iowait 30, steal 40
	for _, bad := range []string{"", "intr 1 2 3", "cpu 1 2 3", "cpu 1 2 3 x 5 6 7 8"} {
		_, _, err := parseHostStat([]byte(bad))
		assert.Error(t, err, "%q", bad)
	}
}

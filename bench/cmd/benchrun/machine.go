package main

import (
	"bufio"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/switchyard/switchyard/bench/harness"
)

// machine describes the host from /proc.
func machine(now time.Time) harness.Machine {
	m := harness.Machine{Cores: runtime.NumCPU(), GoVersion: runtime.Version(), Date: now, CPU: "unknown CPU"}
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPU = strings.TrimSpace(v)
				break
			}
		}
		f.Close()
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		if f := strings.Fields(string(b)); len(f) >= 3 {
			m.LoadAvg = strings.Join(f[:3], " ")
		}
	}
	return m
}

// busyMachine reports whether the 1-minute load average (first field of
// loadavg, read before the run) shows other work: more than a quarter of
// the cores busy.
func busyMachine(loadavg string) (bool, string) {
	f := strings.Fields(loadavg)
	if len(f) == 0 {
		return false, ""
	}
	v, err := strconv.ParseFloat(f[0], 64)
	return err == nil && v > 0.25*float64(runtime.NumCPU()), f[0]
}

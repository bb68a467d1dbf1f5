// Package harness runs the processes of a benchmark and measures them: it
// starts binaries pinned to CPUs, reads their CPU time and memory from /proc,
// scrapes counters from a Prometheus endpoint, holds idle keep-alive
// connections, and renders the results as Markdown and an SVG chart.
// Linux only (it reads /proc and sets CPU affinity).
package harness

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// clockTicks is USER_HZ, the unit of utime/stime in /proc/PID/stat. It is
// 100 on every Linux architecture Go supports.
const clockTicks = 100

// Proc is a started child process. Methods are safe for concurrent use.
type Proc struct {
	Name string
	cmd  *exec.Cmd
	// Addr is what the process printed as "listening http://ADDR" (empty
	// when it was not asked to wait for that line).
	Addr string

	mu      sync.Mutex
	logTail []string // last lines of stderr (and stdout), for error reports
	done    chan struct{}
	waitErr error
}

// StartOptions says how to start a process.
type StartOptions struct {
	// Name labels the process in errors. Default: the binary's base name.
	Name string
	// Env is added to the current environment.
	Env []string
	// CPUs pins the process (all its threads) to these CPUs; nil = no pin.
	CPUs []int
	// WaitListening waits for a first stdout line "listening http://ADDR"
	// and records ADDR. Default false.
	WaitListening bool
	// Timeout bounds WaitListening. Default 30s.
	Timeout time.Duration
}

// Start runs bin with args as o says. The process is killed when ctx ends.
func Start(ctx context.Context, bin string, args []string, o StartOptions) (*Proc, error) {
	if o.Name == "" {
		o.Name = bin[strings.LastIndexByte(bin, '/')+1:]
	}
	if o.Timeout <= 0 {
		o.Timeout = 30 * time.Second
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), o.Env...)
	cmd.WaitDelay = 5 * time.Second
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	p := &Proc{Name: o.Name, cmd: cmd, done: make(chan struct{})}
	if err := startPinned(cmd, o.CPUs); err != nil {
		return nil, fmt.Errorf("start %s: %w", o.Name, err)
	}
	var first chan string // receives stdout's first line when waited for
	if o.WaitListening {
		first = make(chan string, 1)
	}
	var readers sync.WaitGroup
	readers.Add(2)
	go func() {
		defer readers.Done()
		p.collect(stderr, nil)
	}()
	go func() {
		defer readers.Done()
		p.collect(stdout, first) // nil: every line goes to the log
	}()
	go func() {
		readers.Wait() // Wait closes the pipes: read them to the end first
		err := cmd.Wait()
		p.mu.Lock()
		p.waitErr = err
		p.mu.Unlock()
		close(p.done)
	}()
	if !o.WaitListening {
		return p, nil
	}
	select {
	case line := <-first:
		addr, ok := strings.CutPrefix(line, "listening http://")
		if !ok {
			p.Stop()
			return nil, fmt.Errorf("%s: first line %q, want \"listening http://ADDR\"", o.Name, line)
		}
		p.Addr = addr
		return p, nil
	case <-p.done:
		return nil, fmt.Errorf("%s exited before listening: %v\n%s", o.Name, p.waitErr, p.Log())
	case <-time.After(o.Timeout):
		p.Stop()
		return nil, fmt.Errorf("%s did not report its address within %v\n%s", o.Name, o.Timeout, p.Log())
	}
}

// collect keeps the last lines of r; the first line goes to first if non-nil.
func (p *Proc) collect(r io.Reader, first chan<- string) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if first != nil {
			first <- line
			first = nil
			continue
		}
		p.mu.Lock()
		p.logTail = append(p.logTail, line)
		if len(p.logTail) > 40 {
			p.logTail = p.logTail[len(p.logTail)-40:]
		}
		p.mu.Unlock()
	}
	if first != nil {
		close(first)
	}
}

// Log returns the last lines the process wrote.
func (p *Proc) Log() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.logTail, "\n")
}

// PID is the process id.
func (p *Proc) PID() int { return p.cmd.Process.Pid }

// Exited reports whether the process has ended.
func (p *Proc) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Stop sends SIGTERM, waits up to 5 s, then kills the process.
func (p *Proc) Stop() {
	if p.Exited() {
		return
	}
	_ = p.cmd.Process.Signal(unix.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(5 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// CPUSeconds is the process's user+system CPU time so far (all threads),
// with 10 ms resolution.
func CPUSeconds(pid int) (float64, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	// The command name (field 2) may contain spaces; fields after it are
	// numbered from the last ')'.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0, errors.New("harness: malformed /proc/PID/stat")
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, errors.New("harness: short /proc/PID/stat")
	}
	utime, err1 := strconv.ParseUint(f[11], 10, 64) // field 14
	stime, err2 := strconv.ParseUint(f[12], 10, 64) // field 15
	if err1 != nil || err2 != nil {
		return 0, errors.New("harness: bad utime/stime in /proc/PID/stat")
	}
	return float64(utime+stime) / clockTicks, nil
}

// MemStatus returns a field of /proc/PID/status in bytes, e.g. "VmHWM"
// (peak resident set) or "VmRSS" (current).
func MemStatus(pid int, field string) (int64, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, err
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && k == field {
			n, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return n << 10, err
		}
	}
	return 0, fmt.Errorf("harness: no %s in /proc/%d/status", field, pid)
}

// startPinned starts cmd with the CPU affinity cpus (nil: inherited). The
// fork happens on an OS thread whose affinity is set first, and a child
// inherits its parent thread's affinity; the thread is then discarded
// (LockOSThread without Unlock) so no other goroutine runs pinned by mistake.
func startPinned(cmd *exec.Cmd, cpus []int) error {
	if len(cpus) == 0 {
		return cmd.Start()
	}
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		if err := unix.SchedSetaffinity(0, cpuSet(cpus)); err != nil {
			errc <- fmt.Errorf("sched_setaffinity %v: %w", cpus, err)
			return
		}
		errc <- cmd.Start()
	}()
	return <-errc
}

// PinSelf pins every thread of the current process (and so every thread it
// creates later) to cpus.
func PinSelf(cpus []int) error {
	set := cpuSet(cpus)
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return err
	}
	for _, t := range tasks {
		tid, err := strconv.Atoi(t.Name())
		if err != nil {
			continue
		}
		if err := unix.SchedSetaffinity(tid, set); err != nil && !errors.Is(err, unix.ESRCH) {
			return fmt.Errorf("sched_setaffinity %v: %w", cpus, err)
		}
	}
	return nil
}

// AllowedCPUs lists the CPUs this process may run on, in order.
func AllowedCPUs() ([]int, error) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return nil, err
	}
	var cpus []int
	for c := 0; c < len(set)*64; c++ {
		if set.IsSet(c) {
			cpus = append(cpus, c)
		}
	}
	return cpus, nil
}

func cpuSet(cpus []int) *unix.CPUSet {
	var set unix.CPUSet
	for _, c := range cpus {
		set.Set(c)
	}
	return &set
}

// RaiseFileLimit raises the soft RLIMIT_NOFILE to the hard limit and
// returns the new soft limit. Children started afterwards inherit it (Go
// only restores the original limit for children when the program never
// calls Setrlimit itself).
func RaiseFileLimit() (uint64, error) {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return 0, err
	}
	rl.Cur = rl.Max
	// syscall.Setrlimit, not x/sys/unix: only the former tells os/exec to
	// stop restoring the pre-Go soft limit in children.
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return 0, err
	}
	return rl.Cur, nil
}

// Counts are per-process event counts that do not depend on how busy the
// machine is: read and write system calls (/proc/PID/io syscr, syscw:
// read(2) and write(2) and their vector forms, EAGAIN included; not
// recvfrom or sendto) and context switches summed over the threads
// (/proc/PID/task/*/status, voluntary and not).
type Counts struct{ Reads, Writes, CtxSwitches int64 }

// ReadCounts reads pid's Counts.
func ReadCounts(pid int) (Counts, error) {
	var c Counts
	dir := "/proc/" + strconv.Itoa(pid)
	io, err := os.ReadFile(dir + "/io")
	if err != nil {
		return c, err
	}
	for line := range strings.SplitSeq(string(io), "\n") {
		k, v, _ := strings.Cut(line, ": ")
		switch k {
		case "syscr":
			c.Reads, _ = strconv.ParseInt(v, 10, 64)
		case "syscw":
			c.Writes, _ = strconv.ParseInt(v, 10, 64)
		}
	}
	tasks, err := os.ReadDir(dir + "/task")
	if err != nil {
		return c, err
	}
	for _, t := range tasks {
		st, err := os.ReadFile(dir + "/task/" + t.Name() + "/status")
		if err != nil {
			continue // the thread exited
		}
		for line := range strings.SplitSeq(string(st), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.HasSuffix(k, "ctxt_switches") {
				n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
				c.CtxSwitches += n
			}
		}
	}
	return c, nil
}

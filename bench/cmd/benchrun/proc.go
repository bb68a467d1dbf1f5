package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/valyala/fasthttp"
	"golang.org/x/sys/unix"
)

// proc is a started child process. Its output is kept (the last lines) for
// error reports.
type proc struct {
	name string
	addr string // from its first stdout line "listening http://ADDR", or set by the caller
	cmd  *exec.Cmd
	done chan struct{}
	mu   sync.Mutex
	tail []string
}

// errExited marks a process that ended before it was ready.
var errExited = errors.New("exited before ready")

// start runs bin pinned to cpus (nil: unpinned) with env added to ours; with
// listening it waits for the first stdout line "listening http://ADDR". The
// process is killed when ctx ends.
func start(ctx context.Context, name string, cpus []int, env []string, listening bool, bin string, args ...string) (*proc, error) {
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.WaitDelay = 5 * time.Second
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	p := &proc{name: name, cmd: cmd, done: make(chan struct{})}
	if err := startPinned(cmd, cpus); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	var first chan string
	if listening {
		first = make(chan string, 1)
	}
	var readers sync.WaitGroup
	readers.Add(2)
	go func() { defer readers.Done(); p.collect(stderr, nil) }()
	go func() { defer readers.Done(); p.collect(stdout, first) }()
	go func() {
		readers.Wait() // Wait closes the pipes: read them to the end first
		_ = cmd.Wait()
		close(p.done)
	}()
	if !listening {
		return p, nil
	}
	select {
	case line, ok := <-first:
		if addr, found := strings.CutPrefix(line, "listening http://"); found {
			p.addr = addr
			return p, nil
		}
		if ok {
			p.stop()
			return nil, fmt.Errorf("%s: first line %q, want \"listening http://ADDR\"", name, line)
		}
	case <-p.done:
	case <-time.After(30 * time.Second):
		p.stop()
		return nil, fmt.Errorf("%s did not report its address: %s", name, p.lastLines(5))
	}
	<-p.done // stdout closed: it is ending
	return nil, fmt.Errorf("%s %w (%v): %s", name, errExited, cmd.ProcessState, p.lastLines(5))
}

// collect keeps the last 40 lines of r; the first goes to first if non-nil.
func (p *proc) collect(r io.Reader, first chan<- string) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if first != nil {
			first <- sc.Text()
			first = nil
			continue
		}
		p.mu.Lock()
		p.tail = append(p.tail, sc.Text())
		if len(p.tail) > 40 {
			p.tail = p.tail[1:]
		}
		p.mu.Unlock()
	}
	if first != nil {
		close(first)
	}
}

// lastLines is the last n lines the process wrote, joined with " | ".
func (p *proc) lastLines(n int) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.tail[max(0, len(p.tail)-n):], " | ")
}

func (p *proc) pid() int { return p.cmd.Process.Pid }

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop sends SIGTERM, waits up to 5 s, then kills the process.
func (p *proc) stop() {
	if p == nil || p.exited() {
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

// startPinned starts cmd with the CPU affinity cpus (nil: inherited). A
// child inherits the affinity of the thread that forks it, so the fork runs
// on a locked thread set first, which then exits (LockOSThread without
// Unlock) so that no other goroutine runs pinned by mistake.
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

// pinSelf pins every thread of this process (and so those it makes later).
func pinSelf(cpus []int) error {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return err
	}
	for _, t := range tasks {
		tid, _ := strconv.Atoi(t.Name())
		if err := unix.SchedSetaffinity(tid, cpuSet(cpus)); err != nil && !errors.Is(err, unix.ESRCH) {
			return fmt.Errorf("sched_setaffinity %v: %w", cpus, err)
		}
	}
	return nil
}

// allowedCPUs lists the CPUs this process may run on.
func allowedCPUs() ([]int, error) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return nil, err
	}
	var cpus []int
	for c := range len(set) * 64 {
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

// raiseFileLimit raises the soft RLIMIT_NOFILE to the hard limit for this
// process and the children it starts. syscall.Setrlimit, not x/sys/unix:
// only the former stops os/exec restoring the old limit in children.
func raiseFileLimit() error {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return err
	}
	rl.Cur = rl.Max
	return syscall.Setrlimit(syscall.RLIMIT_NOFILE, &rl)
}

// usage is what a proxy process spent: CPU seconds (utime+stime, 10 ms
// ticks), read(2) and write(2) calls (/proc/PID/io syscr and syscw, EAGAIN
// included), context switches summed over its threads, and heap
// allocations (go_memstats_mallocs_total). The counts do not depend on how
// busy the machine is.
type usage struct {
	cpu, mallocs               float64
	reads, writes, ctxSwitches int64
}

func (u usage) plus(o usage, sign int64) usage {
	f := float64(sign)
	return usage{u.cpu + f*o.cpu, u.mallocs + f*o.mallocs, u.reads + sign*o.reads, u.writes + sign*o.writes, u.ctxSwitches + sign*o.ctxSwitches}
}

// readUsage reads pid's usage, the allocations from its Prometheus page.
func readUsage(pid int, metricsURL string) (u usage, err error) {
	dir := "/proc/" + strconv.Itoa(pid)
	b, err := os.ReadFile(dir + "/stat")
	if err != nil {
		return u, err
	}
	// Fields are counted after the command name, which may hold spaces.
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	if len(f) < 13 {
		return u, errors.New("short /proc/PID/stat")
	}
	utime, _ := strconv.ParseFloat(f[11], 64)
	stime, _ := strconv.ParseFloat(f[12], 64)
	u.cpu = (utime + stime) / 100 // USER_HZ is 100 on every Linux Go supports
	if b, err = os.ReadFile(dir + "/io"); err != nil {
		return u, err
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		k, v, _ := strings.Cut(line, ": ")
		switch k {
		case "syscr":
			u.reads, _ = strconv.ParseInt(v, 10, 64)
		case "syscw":
			u.writes, _ = strconv.ParseInt(v, 10, 64)
		}
	}
	tasks, err := os.ReadDir(dir + "/task")
	if err != nil {
		return u, err
	}
	for _, t := range tasks {
		st, _ := os.ReadFile(dir + "/task/" + t.Name() + "/status") // a thread may have exited
		for line := range strings.SplitSeq(string(st), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.HasSuffix(k, "ctxt_switches") {
				n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
				u.ctxSwitches += n
			}
		}
	}
	if metricsURL == "" {
		return u, nil
	}
	m, err := scrape(metricsURL, "go_memstats_mallocs_total")
	if err != nil {
		return u, err
	}
	u.mallocs = m[0]
	return u, nil
}

// memStatus is a /proc/PID/status field in bytes: VmRSS, VmHWM (peak).
func memStatus(pid int, field string) int64 {
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	for line := range strings.SplitSeq(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && k == field {
			n, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return n << 10
		}
	}
	return 0
}

// scrape returns the values of the unlabelled samples names on the
// Prometheus text page at url.
func scrape(url string, names ...string) ([]float64, error) {
	status, body, err := fasthttp.GetTimeout(nil, url, 5*time.Second)
	if err != nil || status != 200 {
		return nil, fmt.Errorf("GET %s: %d %v", url, status, err)
	}
	v := make([]float64, len(names))
	for i, name := range names {
		found := false
		for line := range strings.SplitSeq(string(body), "\n") {
			if rest, ok := strings.CutPrefix(line, name+" "); ok {
				v[i], err = strconv.ParseFloat(strings.Fields(rest + " x")[0], 64)
				found = err == nil
				break
			}
		}
		if !found {
			return nil, fmt.Errorf("%s: no sample %s", url, name)
		}
	}
	return v, nil
}

// freeAddr is a 127.0.0.1 address whose port is free right now.
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// waitHTTP polls url until it answers 200, p exits, or timeout.
func waitHTTP(ctx context.Context, url string, p *proc, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		status, _, err := fasthttp.GetTimeout(nil, url, time.Second)
		switch {
		case err == nil && status == 200:
			return nil
		case p.exited():
			return fmt.Errorf("%s %w: %s", p.name, errExited, p.lastLines(5))
		case time.Now().After(deadline) || ctx.Err() != nil:
			return fmt.Errorf("%s not ready at %s after %v (status %d, %v): %s", p.name, url, timeout, status, err, p.lastLines(5))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

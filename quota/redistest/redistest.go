// Package redistest runs a real redis-server for tests, each on its own
// free loopback port, and a loopback TCP proxy that can stall the
// connection to it. Tests skip with a clear message when redis-server is
// not installed, except under CI=true, where they fail.
package redistest

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Server is one redis-server process.
type Server struct {
	t    testing.TB
	bin  string
	args []string
	Port int
	cmd  *exec.Cmd
	mu   sync.Mutex
}

// Start runs redis-server on a free loopback port with extra arguments
// (such as "--requirepass", "pw") and stops it when the test ends.
func Start(t testing.TB, extra ...string) *Server {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("redis-server is not installed, and CI=true: .ci/run installs it (apt-get install redis-server)")
		}
		t.Skip("redis-server is not installed (apt-get install redis-server); skipping the tests against a real Redis")
	}
	s := &Server{t: t, bin: bin, args: extra, Port: FreePort(t)}
	s.start()
	t.Cleanup(s.Kill)
	return s
}

// FreePort returns a loopback TCP port that was free a moment ago.
func FreePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func (s *Server) start() {
	s.t.Helper()
	args := append([]string{"--port", strconv.Itoa(s.Port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--daemonize", "no", "--protected-mode", "no"}, s.args...)
	cmd := exec.Command(s.bin, args...)
	out, _ := cmd.StdoutPipe()
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		s.t.Fatal(err)
	}
	ready := make(chan struct{})
	var once sync.Once
	var logs strings.Builder
	var lmu sync.Mutex
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lmu.Lock()
			logs.WriteString(sc.Text() + "\n")
			lmu.Unlock()
			if strings.Contains(sc.Text(), "Ready to accept connections") {
				once.Do(func() { close(ready) })
			}
		}
	}()
	select {
	case <-ready:
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		lmu.Lock()
		defer lmu.Unlock()
		s.t.Fatalf("redis-server did not start on port %d:\n%s", s.Port, logs.String())
	}
	s.mu.Lock()
	s.cmd = cmd
	s.mu.Unlock()
}

// Addr is host:port of the server.
func (s *Server) Addr() string { return "127.0.0.1:" + strconv.Itoa(s.Port) }

// URL is redis://host:port.
func (s *Server) URL() string { return "redis://" + s.Addr() }

// CPU returns the server process's CPU time so far (user + system, from
// /proc, in clock ticks of 10 ms); 0 when it cannot be read.
func (s *Server) CPU() time.Duration {
	s.mu.Lock()
	cmd := s.cmd
	s.mu.Unlock()
	if cmd == nil {
		return 0
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/stat")
	if err != nil {
		return 0
	}
	// Fields after the ")" that ends the command name: utime and stime
	// are the 12th and 13th.
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(u+st) * 10 * time.Millisecond
}

// Kill stops the server at once (SIGKILL), as a crash would.
func (s *Server) Kill() {
	s.mu.Lock()
	cmd := s.cmd
	s.cmd = nil
	s.mu.Unlock()
	if cmd != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}
}

// Restart starts the server again on the same port (empty: nothing was
// saved).
func (s *Server) Restart() {
	s.t.Helper()
	s.Kill()
	s.start()
}

// Do sends one command in the inline protocol and returns the reply's
// first line (for test assertions only).
func (s *Server) Do(args ...string) string {
	s.t.Helper()
	c, err := net.DialTimeout("tcp", s.Addr(), 2*time.Second)
	if err != nil {
		s.t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := io.WriteString(c, b.String()); err != nil {
		s.t.Fatal(err)
	}
	r := bufio.NewReader(c)
	line, err := r.ReadString('\n')
	if err != nil {
		s.t.Fatal(err)
	}
	line = strings.TrimRight(line, "\r\n")
	if strings.HasPrefix(line, "$") && line != "$-1" {
		n, _ := strconv.Atoi(line[1:])
		v := make([]byte, n+2)
		if _, err := io.ReadFull(r, v); err != nil {
			s.t.Fatal(err)
		}
		return string(v[:n])
	}
	if strings.HasPrefix(line, "*") { // an array: its first bulk element
		n, _ := strconv.Atoi(line[1:])
		var parts []string
		for i := 0; i < n; i++ {
			h, _ := r.ReadString('\n')
			if strings.HasPrefix(h, "$") {
				v, _ := r.ReadString('\n')
				parts = append(parts, strings.TrimRight(v, "\r\n"))
			} else {
				parts = append(parts, strings.TrimRight(h, "\r\n"))
			}
		}
		return strings.Join(parts, " ")
	}
	return line
}

// Proxy is a loopback TCP proxy in front of a server whose forwarding can
// be stopped (Stall): connections stay open but no byte passes, as with a
// Redis that hangs or a network that drops packets.
type Proxy struct {
	ln      net.Listener
	target  string
	stalled chan struct{} // closed while forwarding; replaced to stall
	mu      sync.Mutex
	conns   []net.Conn
}

// NewProxy starts a proxy to target, closed when the test ends.
func NewProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{ln: ln, target: target, stalled: make(chan struct{})}
	close(p.stalled)
	go p.accept()
	t.Cleanup(p.Close)
	return p
}

// Addr is the proxy's host:port.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// URL is redis://proxy.
func (p *Proxy) URL() string { return "redis://" + p.Addr() }

// Stall stops forwarding (true) or resumes it (false).
func (p *Proxy) Stall(on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	open := false
	select {
	case <-p.stalled:
		open = true
	default:
	}
	switch {
	case on && open:
		p.stalled = make(chan struct{})
	case !on && !open:
		close(p.stalled)
	}
}

func (p *Proxy) gate() chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stalled
}

// Close stops the proxy and its connections.
func (p *Proxy) Close() {
	_ = p.ln.Close()
	p.Stall(false)
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		_ = c.Close()
	}
}

func (p *Proxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		<-p.gate() // a stalled proxy accepts but never connects onwards
		u, err := net.Dial("tcp", p.target)
		if err != nil {
			_ = c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, c, u)
		p.mu.Unlock()
		go p.pipe(c, u)
		go p.pipe(u, c)
	}
}

func (p *Proxy) pipe(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			<-p.gate()
			if _, werr := dst.Write(buf[:n]); werr != nil {
				break
			}
		}
		if err != nil {
			break
		}
	}
	_ = dst.Close()
	_ = src.Close()
}

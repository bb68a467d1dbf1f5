package deadline

import (
	"errors"
	"net"
	"os"
	"syscall"
	"testing"
	"time"
)

func pair(t *testing.T) (*Conn, net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	lln := Listener(ln)
	done := make(chan net.Conn, 1)
	go func() {
		c, err := lln.Accept()
		if err != nil {
			done <- nil
			return
		}
		done <- c
	}()
	peer, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	c := <-done
	if c == nil {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { c.Close(); peer.Close() })
	return c.(*Conn), peer
}

// readAsync reads one byte from c on a goroutine of its own; the channel
// gets the read's error.
func readAsync(c net.Conn) <-chan error {
	ch := make(chan error, 1)
	go func() {
		var b [1]byte
		_, err := c.Read(b[:])
		ch <- err
	}()
	return ch
}

// readTimesOut reads with nothing to read and reports how long the read
// took to time out.
func readTimesOut(t *testing.T, c net.Conn, within time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	ch := readAsync(c)
	select {
	case err := <-ch:
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("read: %v, want a deadline error", err)
		}
		return time.Since(start)
	case <-time.After(within):
		t.Fatalf("read did not time out within %v", within)
	}
	return 0
}

func TestConnDeadlines(t *testing.T) {
	c, _ := pair(t)
	// A read deadline re-set a moment later to (almost) the same time is
	// the one armed first: it still fires.
	if err := c.SetReadDeadline(time.Now().Add(200 * time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	if d := readTimesOut(t, c, 2*time.Second); d < 150*time.Millisecond {
		t.Fatalf("timed out after %v, want about 200ms", d)
	}
	c.SetReadDeadline(time.Now().Add(200 * time.Millisecond)) //nolint:errcheck
	readTimesOut(t, c, 2*time.Second)
	// An earlier deadline is armed at once.
	c.SetReadDeadline(time.Now().Add(time.Hour)) //nolint:errcheck
	mustNotEnd(t, c, 50*time.Millisecond)
	c.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	readTimesOut(t, c, time.Second)
	// Only the last deadline set before a read counts: a much later one
	// replaces an earlier one, however many were set in between.
	c.SetReadDeadline(time.Now().Add(-time.Second))          //nolint:errcheck
	c.SetReadDeadline(time.Now().Add(50 * time.Millisecond)) //nolint:errcheck
	c.SetReadDeadline(time.Now().Add(time.Hour))             //nolint:errcheck
	mustNotEnd(t, c, 300*time.Millisecond)
	c.SetReadDeadline(time.Now().Add(50 * time.Millisecond)) //nolint:errcheck
	readTimesOut(t, c, time.Second)
	// Zero clears.
	c.SetReadDeadline(time.Time{}) //nolint:errcheck
	mustNotEnd(t, c, 150*time.Millisecond)
	// SetDeadline sets the write side too: a write deadline in the past
	// fails the next write.
	c.SetDeadline(time.Now().Add(-time.Second)) //nolint:errcheck
	if _, err := c.Write([]byte("x")); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("write after a passed deadline: %v", err)
	}
	c.SetDeadline(time.Time{}) //nolint:errcheck
	if _, err := c.Write([]byte("x")); err != nil {
		t.Fatalf("write after clearing: %v", err)
	}
}

// mustNotEnd checks that a read with nothing to read is still waiting
// after d, then ends it with a deadline in the past set on the raw
// connection (a deadline set through c would only apply to the next Read).
func mustNotEnd(t *testing.T, c *Conn, d time.Duration) {
	t.Helper()
	ch := readAsync(c)
	select {
	case err := <-ch:
		t.Fatalf("read ended within %v: %v", d, err)
	case <-time.After(d):
	}
	c.Conn.SetReadDeadline(time.Now()) //nolint:errcheck
	if err := <-ch; !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read: %v", err)
	}
	c.rd.Forget() // the raw deadline is not what c armed
}

// TestConnKeepsSocketAccess: the client peeks go through SyscallConn, and
// fasthttp's TCPKeepalive through SetKeepAlive.
func TestConnKeepsSocketAccess(t *testing.T) {
	c, peer := pair(t)
	raw, err := c.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	peer.Write([]byte("hi")) //nolint:errcheck
	time.Sleep(20 * time.Millisecond)
	var n int
	var buf [8]byte
	if err := raw.Control(func(fd uintptr) {
		n, _, _ = syscall.Recvfrom(int(fd), buf[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
	}); err != nil || n != 2 {
		t.Fatalf("peek through SyscallConn: n=%d err=%v", n, err)
	}
	if err := c.SetKeepAlive(true); err != nil {
		t.Fatal(err)
	}
	if err := c.SetKeepAlivePeriod(30 * time.Second); err != nil {
		t.Fatal(err)
	}
}

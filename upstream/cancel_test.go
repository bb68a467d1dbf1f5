//go:build linux

package upstream

import (
	"net"
	"testing"
	"time"
)

// tcpPair returns both ends of a loopback TCP connection.
func tcpPair(t *testing.T) (client, server net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	client, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server, err = ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close(); server.Close() })
	return client, server
}

func watcherIdle() bool {
	clientWatch.mu.Lock()
	defer clientWatch.mu.Unlock()
	return !clientWatch.running && len(clientWatch.guards) == 0
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for i := 0; i < 400; i++ {
		if cond() {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s", what)
}

// TestGuardCancelsOnClientClose: a walk still running after watchDelay is
// watched; its client closing closes the cancel channel and the bound
// upstream connection; releasing the guard lets the watcher goroutine end.
func TestGuardCancelsOnClientClose(t *testing.T) {
	cli, srvSide := tcpPair(t) // srvSide is the gateway's end of the client connection
	upLocal, _ := tcpPair(t)
	up := newTrackedConn(upLocal, nil)
	g := acquireGuard(srvSide)
	g.bind(up)
	waitUntil(t, "the walk watched", func() bool { return g.state.Load() == guardWatched })
	if g.Gone() {
		t.Fatal("a live client found gone")
	}
	cli.Close()
	waitUntil(t, "the client found gone", g.Gone)
	select {
	case <-g.cancel:
	default:
		t.Fatal("cancel channel still open")
	}
	if !up.canceled.Load() || g.unbind(up) {
		t.Fatal("the upstream connection was not taken and closed")
	}
	if _, err := up.Write([]byte("x")); err == nil {
		t.Fatal("the upstream connection still writes")
	}
	g.release()
	waitUntil(t, "the watcher goroutine to end", watcherIdle)

	// Reused from the pool: a fresh cancel channel, not gone.
	g2 := acquireGuard(srvSide)
	defer g2.release()
	if g2.Gone() {
		t.Fatal("a reused guard starts gone")
	}
	select {
	case <-g2.cancel:
		t.Fatal("a reused guard's cancel channel is closed")
	default:
	}
}

// TestGuardReleasedEarlyIsNeverWatched: a walk that ends before watchDelay
// (the fast path) never reaches the watcher.
func TestGuardReleasedEarlyIsNeverWatched(t *testing.T) {
	_, srvSide := tcpPair(t)
	g := acquireGuard(srvSide)
	g.release()
	time.Sleep(watchDelay + 100*time.Millisecond)
	if !watcherIdle() {
		t.Fatal("a released guard was watched")
	}
}

// TestGuardTimerKeptAcrossWalks: a guard reused within watchDelay keeps the
// timer its last walk left pending instead of re-arming it, and a walk on it
// that runs long is still watched no later than watchDelay after it began.
func TestGuardTimerKeptAcrossWalks(t *testing.T) {
	_, srvSide := tcpPair(t)
	g := acquireGuard(srvSide)
	due := g.due
	g.release()
	time.Sleep(watchDelay / 3)
	// The same guard again, as the pool hands it out.
	g.client = srvSide
	g.state.Store(guardArmed)
	begun := time.Now()
	g.arm()
	if g.due != due {
		t.Fatal("a timer pending soon enough was re-armed")
	}
	waitUntil(t, "the walk watched", func() bool { return g.state.Load() == guardWatched })
	if took := time.Since(begun); took > watchDelay+50*time.Millisecond {
		t.Fatalf("watched %v after the walk began, want at most about %v", took, watchDelay)
	}
	g.release()
	waitUntil(t, "the watcher goroutine to end", watcherIdle)
	// Once the timer fired, the next walk arms it afresh.
	g.client = srvSide
	g.state.Store(guardArmed)
	g.arm()
	if g.due == due {
		t.Fatal("a fired timer was not re-armed")
	}
	g.state.Store(guardIdle)
}

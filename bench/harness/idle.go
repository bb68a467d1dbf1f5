package harness

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// IdleConns holds keep-alive client connections that have each completed
// one request and then sit idle. Safe for concurrent use.
type IdleConns struct {
	mu    sync.Mutex
	conns []net.Conn
}

// PostRequest is the raw HTTP/1.1 request "POST path" with a JSON body and
// the extra header lines hdr ("Name: value" each), for OpenIdleRequest.
func PostRequest(addr, path string, body []byte, hdr ...string) []byte {
	var b strings.Builder
	b.WriteString("POST " + path + " HTTP/1.1\r\nHost: " + addr + "\r\nUser-Agent: switchyard-bench\r\n")
	b.WriteString("Content-Type: application/json\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n")
	for _, h := range hdr {
		b.WriteString(h + "\r\n")
	}
	b.WriteString("\r\n")
	b.Write(body)
	return []byte(b.String())
}

// OpenIdleRequest opens n connections to addr with parallel dialers, sends
// the raw HTTP/1.1 request req (see PostRequest) on each and reads the
// response (any status), leaving the connection open and idle. On error the
// connections opened so far stay held (Close them).
func OpenIdleRequest(ctx context.Context, addr string, req []byte, n, parallel int) (*IdleConns, error) {
	ic := &IdleConns{conns: make([]net.Conn, 0, n)}
	jobs := make(chan struct{})
	var wg sync.WaitGroup
	var firstErr error
	var errOnce sync.Once
	d := net.Dialer{Timeout: 10 * time.Second}
	for range max(parallel, 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			br := bufio.NewReaderSize(nil, 4096)
			for range jobs {
				c, err := openOne(ctx, &d, addr, req, br)
				if err != nil {
					errOnce.Do(func() { firstErr = err })
					continue
				}
				ic.mu.Lock()
				ic.conns = append(ic.conns, c)
				ic.mu.Unlock()
			}
		}()
	}
	for range n {
		if ctx.Err() != nil {
			break
		}
		jobs <- struct{}{}
	}
	close(jobs)
	wg.Wait()
	if firstErr == nil {
		firstErr = ctx.Err()
	}
	return ic, firstErr
}

func openOne(ctx context.Context, d *net.Dialer, addr string, req []byte, br *bufio.Reader) (net.Conn, error) {
	c, err := d.DialContext(ctx, "tcp4", addr)
	if err != nil {
		return nil, err
	}
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Write(req); err != nil {
		c.Close()
		return nil, err
	}
	br.Reset(c)
	resp, err := http.ReadResponse(br, nil)
	if err == nil {
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	if err == nil && resp.Close {
		err = errors.New("server answered Connection: close")
	}
	if err == nil && br.Buffered() > 0 {
		err = fmt.Errorf("%d unexpected bytes after the response", br.Buffered())
	}
	if err != nil {
		c.Close()
		return nil, err
	}
	_ = c.SetDeadline(time.Time{})
	return c, nil
}

// Len is the number of connections held.
func (ic *IdleConns) Len() int {
	ic.mu.Lock()
	defer ic.mu.Unlock()
	return len(ic.conns)
}

// Alive counts held connections the server has not closed: a short read
// that times out means open and idle; EOF or an error means closed.
func (ic *IdleConns) Alive() int {
	ic.mu.Lock()
	defer ic.mu.Unlock()
	var alive atomic.Int64
	var wg sync.WaitGroup
	const workers = 128
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var one [1]byte
			for i := w; i < len(ic.conns); i += workers {
				c := ic.conns[i]
				_ = c.SetReadDeadline(time.Now().Add(5 * time.Millisecond))
				_, err := c.Read(one[:])
				var ne net.Error
				if errors.As(err, &ne) && ne.Timeout() {
					alive.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	return int(alive.Load())
}

// Close closes every held connection.
func (ic *IdleConns) Close() {
	ic.mu.Lock()
	defer ic.mu.Unlock()
	for _, c := range ic.conns {
		c.Close()
	}
	ic.conns = nil
}

package daemon

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchyard/switchyard/mock"
)

// syncBuffer is a log sink safe for concurrent writes and reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startMock starts a mock upstream on 127.0.0.1 and closes it at the
// end of the test.
func startMock(t *testing.T, o mock.Options) *mock.Server {
	t.Helper()
	m, err := mock.Start("127.0.0.1:0", o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	return m
}

// writeFile writes a config file (atomically, as an operator's editor or
// a config-management tool would: write then rename).
func writeFile(t *testing.T, path, body string) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// startDaemon builds a Daemon from the file at path, serves it on
// 127.0.0.1 (the config's listen is overridden) and drains it at the end
// of the test. It returns the daemon and its base URL.
func startDaemon(t *testing.T, path string, logs io.Writer) (*Daemon, string) {
	t.Helper()
	d, err := New(path, "127.0.0.1:0", logs)
	if err != nil {
		t.Fatalf("New: %v\nlogs:\n%v", err, logs)
	}
	return d, serveDaemon(t, d)
}

// serveDaemon serves d on the address it was built for and drains it at
// the end of the test; it returns the base URL.
func serveDaemon(t *testing.T, d *Daemon) string {
	t.Helper()
	ln, err := d.Listen()
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- d.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := d.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return "http://" + d.Addr().String()
}

// newClient returns an HTTP client with keep-alive connections, bounded.
func newClient() *http.Client {
	return &http.Client{
		Timeout:   10 * time.Second,
		Transport: &http.Transport{MaxIdleConnsPerHost: 64, DisableCompression: true},
	}
}

// answer is what a test keeps of one gateway response.
type answer struct {
	status int
	target string
	body   string
}

// chat posts a chat completion for model (streaming when stream) and reads
// the whole answer.
func chat(c *http.Client, base, model string, stream bool) (answer, error) {
	body := fmt.Sprintf(`{"model":%q,"stream":%v,"messages":[{"role":"user","content":"hi"}]}`, model, stream)
	resp, err := c.Post(base+"/v1/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		return answer{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return answer{}, err
	}
	return answer{status: resp.StatusCode, target: resp.Header.Get("X-Gateway-Target"), body: string(b)}, nil
}

// checkStream returns an error unless body is a complete SSE stream of
// events chunks ending with data: [DONE].
func checkStream(body string, events int) error {
	var data []string
	sc := bufio.NewScanner(strings.NewReader(body))
	for sc.Scan() {
		if line, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			data = append(data, line)
		}
	}
	if len(data) == 0 || data[len(data)-1] != "[DONE]" {
		return errors.New("stream does not end with data: [DONE]")
	}
	if got := len(data) - 1; got != events {
		return fmt.Errorf("stream has %d chunks before [DONE], want %d", got, events)
	}
	return nil
}

// waitFor polls cond every 10 ms until it holds or d passes.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	end := time.Now().Add(d)
	for !cond() {
		if time.Now().After(end) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// cfgPath returns a config file path in a fresh temporary directory.
func cfgPath(t *testing.T) string {
	return filepath.Join(t.TempDir(), "switchyard.yaml")
}

// getWith GETs url with c and returns the status and body.
func getWith(t *testing.T, c *http.Client, url string) (int, string) {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

package e2e

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/switchyard/switchyard/daemon"
)

// oneTargetYAML is a gateway with a single target, t, of provider %[1]s at
// base URL %[2]s with credential %[3]s and timeout %[4]s, plus the target
// YAML lines %[5]s; every request falls back to it.
const oneTargetYAML = `server:
  listen: 127.0.0.1:0
  request_timeout: 20s
  shutdown_timeout: 5s
log:
  level: info
  format: json
  access_log: true
strategy:
  mode: conditional
  conditions:
    - key: model
      value: never-sent
      target_key: t
targets:
  - virtual_key: t
    provider: %[1]s
    base_url: %[2]s
    api_key: %[3]s
    timeout: %[4]s
%[5]s`

// rawGateway is a daemon with one target, spoken to over raw TCP.
type rawGateway struct {
	addr string // host:port of the gateway
	d    *daemon.Daemon
	logs *syncBuffer
}

// startRawGateway starts a one-target gateway (see oneTargetYAML).
func startRawGateway(t *testing.T, provider, baseURL, key, timeout, extra string) *rawGateway {
	t.Helper()
	return startGatewayYAML(t, fmt.Sprintf(oneTargetYAML, provider, baseURL, key, timeout, extra))
}

// startGatewayYAML starts a gateway with the config yaml.
func startGatewayYAML(t *testing.T, yaml string) *rawGateway {
	t.Helper()
	path := filepath.Join(t.TempDir(), "switchyard.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	g := &rawGateway{logs: &syncBuffer{}}
	d, err := daemon.New(path, "127.0.0.1:0", g.logs)
	if err != nil {
		t.Fatalf("daemon.New: %v\nlogs:\n%s", err, g.logs)
	}
	ln, err := d.Listen()
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- d.Serve(ln) }()
	g.d, g.addr = d, d.Addr().String()
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
	return g
}

// rawPost sends one POST over a new TCP connection and reads the answer.
func (g *rawGateway) rawPost(t *testing.T, path, body string) (*http.Response, string) {
	t.Helper()
	c, err := net.DialTimeout("tcp", g.addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(20 * time.Second))
	fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
		path, g.addr, len(body), body)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := resp.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			break
		}
	}
	return resp, b.String()
}

// metric returns the value of the series line starting with prefix in
// /metrics, or "" when absent.
func (g *rawGateway) metric(t *testing.T, prefix string) string {
	t.Helper()
	resp, err := http.Get("http://" + g.addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if line := sc.Text(); strings.HasPrefix(line, prefix+" ") {
			return strings.TrimPrefix(line, prefix+" ")
		}
	}
	return ""
}

// chatBody is a plain chat request for model m.
func chatBody(m string, stream bool) string {
	return fmt.Sprintf(`{"model":%q,"stream":%v,"messages":[{"role":"user","content":"hi"}]}`, m, stream)
}

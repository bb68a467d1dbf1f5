package daemon

import (
	"bytes"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/switchyard/switchyard/mock"
)

// TestFasthttpLoggerLevels: fasthttp's per-connection error lines (one per
// request it refused while reading, e.g. a body over max_request_bytes) are
// debug, so clients cannot flood the log at warn; its other lines are warn.
func TestFasthttpLoggerLevels(t *testing.T) {
	var buf bytes.Buffer
	l := fasthttpLogger{zerolog.New(&buf).Level(zerolog.InfoLevel)}
	l.Printf("error when serving connection %q<->%q: %v", "127.0.0.1:1", "127.0.0.1:2", "fasthttp: body size exceeds the given limit")
	if buf.Len() != 0 {
		t.Fatalf("connection error logged at info level: %s", buf.String())
	}
	l.Printf("Permanent error when accepting new connections: %v", "boom")
	if !strings.Contains(buf.String(), `"level":"warn"`) || !strings.Contains(buf.String(), "boom") {
		t.Fatalf("accept error not at warn: %q", buf.String())
	}

	buf.Reset()
	l = fasthttpLogger{zerolog.New(&buf).Level(zerolog.DebugLevel)}
	l.Printf("error when serving connection %q<->%q: %v", "a", "b", "x")
	if !strings.Contains(buf.String(), `"level":"debug"`) {
		t.Fatalf("connection error not at debug: %q", buf.String())
	}
}

// TestOversizedBodyLogsNoWarning: through the real server, a body over
// max_request_bytes gets 413 and writes no warn line at log.level info.
func TestOversizedBodyLogsNoWarning(t *testing.T) {
	m := startMock(t, mock.Options{})
	path := cfgPath(t)
	writeFile(t, path, strings.Replace(oneTarget("127.0.0.1:1", m.BaseURL(), ""), "server: {", "server: {max_request_bytes: 100, ", 1))
	logs := &syncBuffer{}
	_, base := startDaemon(t, path, logs)
	body := fmt.Sprintf(`{"model":"m","x":%q}`, strings.Repeat("a", 500))
	resp, err := newClient().Post(base+"/v1/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("status %d, want 413", resp.StatusCode)
	}
	if strings.Contains(logs.String(), `"level":"warn"`) {
		t.Fatalf("a client's oversized body logged a warning:\n%s", logs.String())
	}
}

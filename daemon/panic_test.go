package daemon

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/switchyard/switchyard/mock"
	"github.com/switchyard/switchyard/telemetry"
	"github.com/switchyard/switchyard/upstream"
)

// panicOnStreamEnd is the daemon's metrics observer with a bug planted in
// StreamEnd, which runs on fasthttp's stream writer goroutine.
type panicOnStreamEnd struct{ *telemetry.Metrics }

func (panicOnStreamEnd) StreamEnd(upstream.Result, time.Duration) { panic("boom-stream") }

// TestPanicsAreLoggedAndCounted: a panic in the handler and one in a
// committed stream's writer (reported through upstream's PanicObserver) each
// produce one error line with the panic value and its stack, and count once
// in switchyard_panics_total. Neither line carries the request's headers or
// body.
func TestPanicsAreLoggedAndCounted(t *testing.T) {
	up := startMock(t, mock.Options{Name: "up", StreamEvents: 2})
	path := cfgPath(t)
	writeFile(t, path, fmt.Sprintf(`
strategy: {mode: conditional, conditions: [{key: model, value: other, target_key: a}]}
targets:
  - {virtual_key: a, provider: openai, base_url: %q, api_key: sk-FAKEKEY-up-9d1e}
`, up.BaseURL()))
	logs := &syncBuffer{}
	d, err := New(path, "127.0.0.1:0", logs)
	if err != nil {
		t.Fatalf("New: %v\n%s", err, logs)
	}
	// Plant the bugs before serving (the hooks are not changed after).
	g := d.Gateway()
	scrape := g.Metrics
	g.Metrics = func(rc *fasthttp.RequestCtx) {
		if rc.QueryArgs().Has("boom") {
			panic("boom-handler")
		}
		scrape(rc)
	}
	g.Observer = panicOnStreamEnd{d.tel.metrics}
	base := serveDaemon(t, d)
	c := newClient()

	const secretKey, secretPrompt = "sk-FAKEKEY-client-4e2f", "SECRET-PROMPT-77"
	send := func(method, url, body string) int {
		req, _ := http.NewRequest(method, url, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+secretKey)
		req.Header.Set("X-Secret-Header", secretPrompt)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		_, _ = io.ReadAll(resp.Body)
		return resp.StatusCode
	}
	if code := send("GET", base+"/metrics?boom=1", ""); code != 500 {
		t.Fatalf("handler panic answered %d, want 500", code)
	}
	// The stream is committed (200) before its writer panics.
	if code := send("POST", base+"/v1/chat/completions",
		`{"model":"mock-model","stream":true,"messages":[{"role":"user","content":"`+secretPrompt+`"}]}`); code != 200 {
		t.Fatalf("stream answered %d", code)
	}

	waitFor(t, 5*time.Second, "switchyard_panics_total 2", func() bool {
		_, m := getWith(t, c, base+"/metrics")
		return strings.Contains("\n"+m, "\nswitchyard_panics_total 2\n")
	})

	type line struct {
		Level, Message, Panic, Stack string
	}
	var got []line
	var values []string
	sc := bufio.NewScanner(strings.NewReader(logs.String()))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var l line
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("log line is not JSON: %v: %s", err, sc.Text())
		}
		if l.Message == "BUG: panic while serving a request" {
			got = append(got, l)
			values = append(values, l.Panic)
		}
	}
	slices.Sort(values)
	if !slices.Equal(values, []string{"boom-handler", "boom-stream"}) {
		t.Fatalf("panic lines carry %q, want boom-handler and boom-stream\nlogs:\n%s", values, logs)
	}
	for _, l := range got {
		frame := map[string]string{
			"boom-handler": "daemon.TestPanicsAreLoggedAndCounted.func",
			"boom-stream":  "daemon.panicOnStreamEnd.StreamEnd",
		}[l.Panic]
		if l.Level != "error" || !strings.Contains(l.Stack, "goroutine ") || !strings.Contains(l.Stack, frame) {
			t.Errorf("panic line %q: level %q, stack lacks %q:\n%s", l.Panic, l.Level, frame, l.Stack)
		}
	}
	for _, secret := range []string{secretKey, secretPrompt, "FAKEKEY"} {
		if strings.Contains(logs.String(), secret) {
			t.Errorf("%q reached the logs", secret)
		}
	}
}

package admin_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/switchyard/switchyard/cli"
	"github.com/switchyard/switchyard/mock"
)

// chromiumPath is Debian's chromium, which .ci/run installs.
const chromiumPath = "/usr/bin/chromium"

// liveWithin is the console's promise: a state change or a decision shows
// on the page within 2 s (it polls the status every second and long-polls
// the decisions).
const liveWithin = 2 * time.Second

// browser starts a headless Chromium with a fresh profile, with
// authorization (when not "") sent on every request, and records every URL
// the page asks for. It skips the test when Chromium is absent, except in CI.
func browser(t *testing.T, authorization string) (context.Context, func() []string) {
	t.Helper()
	path := chromiumPath
	if _, err := os.Stat(path); err != nil {
		if p, err := exec.LookPath("chromium"); err == nil {
			path = p
		} else if os.Getenv("CI") == "" {
			t.Skip("browser tests skipped: no chromium at " + chromiumPath + " (apt-get install chromium; CI installs it and runs them)")
		} else {
			t.Fatal("CI is set but chromium is not installed: .ci/run must install it")
		}
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("hide-scrollbars", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 800),
	}
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelB := chromedp.NewContext(actx)
	ctx, cancelC := context.WithTimeout(ctx, 90*time.Second)
	t.Cleanup(func() { cancelC(); cancelB(); cancelA() })

	var mu sync.Mutex
	var urls []string
	if err := chromedp.Listen(ctx, func(ev any) {
		if e, ok := ev.(*network.EventRequestWillBeSent); ok {
			mu.Lock()
			urls = append(urls, e.Request.URL)
			mu.Unlock()
		}
	}); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
		if _, err := chromedp.Call(ctx, network.Enable, network.EnableParams{}); err != nil {
			return err
		}
		if authorization == "" {
			return nil
		}
		_, err := chromedp.Call(ctx, network.SetExtraHTTPHeaders, network.SetExtraHTTPHeadersParams{
			Headers: network.Headers{"Authorization": authorization}})
		return err
	})); err != nil {
		t.Fatal(err)
	}
	return ctx, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(urls)
	}
}

// eval evaluates a JavaScript expression into T.
func eval[T any](t *testing.T, ctx context.Context, js string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](js))
	if err != nil {
		t.Fatalf("%s: %v", js, err)
	}
	return v
}

// waitJS polls a JavaScript condition until it is true or within passes.
func waitJS(t *testing.T, ctx context.Context, within time.Duration, what, js string) time.Duration {
	t.Helper()
	start := time.Now()
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](js, chromedp.WithPollingInterval(50*time.Millisecond),
		chromedp.WithPollingTimeout(within))); err != nil {
		t.Fatalf("%s not shown within %v: %v", what, within, err)
	}
	return time.Since(start)
}

// The console in a real browser: it loads from its own listener only,
// draws every rule and target, turns a target whose breaker opens red
// within 2 s, lists a request within 2 s, explains as the CLI does, and
// shows no secret.
func TestConsoleInBrowser(t *testing.T) {
	w := startWorld(t, true)
	ctx, requested := browser(t, "Bearer "+adminKey)
	if err := chromedp.Do(ctx, chromedp.Navigate(w.console)); err != nil {
		t.Fatal(err)
	}

	// The diagram: every rule (and the fallback) and every target.
	waitJS(t, ctx, 10*time.Second, "the diagram", `document.querySelectorAll("#svg g.tgt").length === 3`)
	rules := eval[[]int](t, ctx, `[...document.querySelectorAll("#svg g.rule")].map(g => +g.dataset.rule)`)
	if want := []int{0, 1, 2, -1}; !slices.Equal(rules, want) {
		t.Errorf("rules drawn %v, want %v", rules, want)
	}
	targets := eval[[]string](t, ctx, `[...document.querySelectorAll("#svg g.tgt")].map(g => g.dataset.target + ":" + g.dataset.state)`)
	if want := []string{"alpha:closed", "beta:closed", "gamma:closed"}; !slices.Equal(targets, want) {
		t.Errorf("targets drawn %v, want %v", targets, want)
	}
	// Residency labels and quota room are drawn.
	if got := eval[string](t, ctx, `[...document.querySelectorAll("#svg g.tgt .badge text")].map(e => e.textContent).join(",")`); got != "eu,us" {
		t.Errorf("residency badges %q, want eu,us", got)
	}
	if n := eval[int](t, ctx, `document.querySelectorAll('#svg g.tgt[data-target="alpha"] rect.roomfill').length`); n != 1 {
		t.Errorf("alpha's quota room is not drawn (%d)", n)
	}
	// Chains: rule 1 has an edge to beta and to gamma; 3 rules + fallback
	// make 5 edges.
	if n := eval[int](t, ctx, `document.querySelectorAll("#svg path.edge").length`); n != 5 {
		t.Errorf("%d chain edges drawn, want 5", n)
	}

	// A request shows in the decision list within 2 s.
	if st := w.chat(t, "gpt-4o", "req-browser-1"); st != 200 {
		t.Fatalf("chat: %d", st)
	}
	took := waitJS(t, ctx, liveWithin, "the decision", `!!document.querySelector('#decisions tr[data-request-id="req-browser-1"]')`)
	t.Logf("decision shown %v after the answer", took)
	row := eval[string](t, ctx, `document.querySelector('#decisions tr[data-request-id="req-browser-1"]').innerText`)
	for _, want := range []string{"acme", "gpt-4o", "#0", "alpha", "200"} {
		if !strings.Contains(row, want) {
			t.Errorf("decision row %q does not show %q", row, want)
		}
	}
	// The key's row counts it, with its spend and its quota use.
	waitJS(t, ctx, liveWithin, "acme's request count", `[...document.querySelectorAll("#keys tbody tr")].some(r => r.cells[0].textContent === "acme" && r.cells[1].textContent === "1")`)
	keyRow := eval[string](t, ctx, `[...document.querySelectorAll("#keys tbody tr")].find(r => r.cells[0].textContent === "acme").innerText`)
	if !strings.Contains(keyRow, "$0.0") || !strings.Contains(keyRow, "% ") {
		t.Errorf("acme's row %q shows no spend or quota use", keyRow)
	}

	// beta fails until its breaker opens (two failures; each request fails
	// over to gamma and succeeds); the page shows it open within 2 s.
	w.mocks["beta"].Fail(mock.Failure{Status: 503})
	for i := range 2 {
		if st := w.chat(t, "claude-sonnet-4-6", ""); st != 200 {
			t.Fatalf("claude request %d: %d, want 200 from gamma", i, st)
		}
	}
	took = waitJS(t, ctx, liveWithin, "beta's open circuit", `document.querySelector('#svg g.tgt[data-target="beta"]').dataset.state === "open"`)
	t.Logf("open circuit shown %v after the breaker opened", took)
	if s := eval[string](t, ctx, `document.querySelector('#svg g.tgt[data-target="beta"] .state').textContent`); s != "OPEN" {
		t.Errorf("beta's state label %q, want OPEN", s)
	}

	// The explain form answers what `switchyard explain` prints.
	var cliOut, cliErr bytes.Buffer
	if code := cli.Main([]string{"explain", "-config", w.path, "-model", "claude-sonnet-4-6", "-key", "acme", "-user", "bob"}, &cliOut, &cliErr); code != 0 {
		t.Fatalf("switchyard explain: exit %d: %s", code, cliErr.String())
	}
	if err := chromedp.Do(ctx,
		chromedp.SetValue(`#explain-form input[name=model]`, "claude-sonnet-4-6"),
		chromedp.SetValue(`#explain-form select[name=key]`, "acme"),
		chromedp.SetValue(`#explain-form input[name=user]`, "bob"),
		chromedp.Click(`#explain-form button`),
	); err != nil {
		t.Fatal(err)
	}
	waitJS(t, ctx, 5*time.Second, "the explanation", `document.querySelector("#explain-out").innerText.includes("outcome:")`)
	page := eval[string](t, ctx, `[...document.querySelectorAll("#explain-out div")].map(d => d.textContent).join("\n") + "\n"`)
	if page != cliOut.String() {
		t.Errorf("explain form:\n%s\nswitchyard explain:\n%s", page, cliOut.String())
	}

	// Nothing left the console's listener.
	for _, u := range requested() {
		if !strings.HasPrefix(u, w.console) {
			t.Errorf("the page requested %s, outside the console %s", u, w.console)
		}
	}
	if len(requested()) < 3 {
		t.Errorf("the page made %d requests; the network log is not working", len(requested()))
	}

	// No secret in the DOM, nor in any API answer.
	noSecret(t, "the page's DOM", eval[string](t, ctx, `document.documentElement.outerHTML`))
	auth := "Bearer " + adminKey
	for _, p := range []string{"/", "/app.js", "/app.css", "/api/status", "/api/decisions?after=0&wait=0",
		"/api/explain?model=claude-sonnet-4-6&key=acme&user=bob&stream=true&surface=chat"} {
		code, body := w.get(t, p, auth)
		if code != 200 {
			t.Errorf("GET %s: %d %s", p, code, body)
		}
		noSecret(t, "GET "+p, body)
	}

	screenshots(t, ctx)
}

// screenshots saves the page at a wall screen's size and a phone's to
// $SWITCHYARD_SCREENSHOTS, when set, for a person to look at.
func screenshots(t *testing.T, ctx context.Context) {
	dir := os.Getenv("SWITCHYARD_SCREENSHOTS")
	if dir == "" {
		return
	}
	for _, s := range []struct {
		name string
		w, h int64
		mob  bool
	}{{"console-1280x800.png", 1280, 800, false}, {"console-phone-390.png", 390, 844, true}} {
		var opts []chromedp.EmulateViewportOption
		if s.mob {
			opts = append(opts, chromedp.EmulateScale(2), chromedp.EmulateMobile)
		}
		if err := chromedp.Do(ctx, chromedp.EmulateViewport(s.w, s.h, opts...), chromedp.Sleep(1200*time.Millisecond)); err != nil {
			t.Fatal(err)
		}
		shot := chromedp.CaptureScreenshot()
		if s.mob {
			shot = chromedp.FullScreenshot(100) // 100: PNG
		}
		b, err := chromedp.Run(ctx, shot)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, s.name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// Without the admin key, the page, its files and every API answer 401 —
// in the browser and to a plain client; a wrong key too; the right one as
// Bearer or as HTTP Basic's password opens it.
func TestConsoleNeedsKey(t *testing.T) {
	w := startWorld(t, true)
	paths := []string{"/", "/index.html", "/app.js", "/app.css", "/api/status", "/api/decisions?after=0&wait=0",
		"/api/explain?model=gpt-4o", "/nope"}
	for _, auth := range []string{"", "Bearer wrong-key-0123456789", "Bearer " + adminKey + "x", "Basic " + b64("admin:wrong"), adminKey} {
		for _, p := range paths {
			code, body := w.get(t, p, auth)
			if code != 401 {
				t.Errorf("GET %s with %q: %d, want 401", p, auth, code)
			}
			noSecret(t, "401 answer", body)
			if strings.Contains(body, "<svg") || strings.Contains(body, "decisions") && !strings.Contains(body, "error") {
				t.Errorf("GET %s without the key shows content: %.80s", p, body)
			}
		}
	}
	for _, auth := range []string{"Bearer " + adminKey, "bearer " + adminKey, "Basic " + b64("ops:"+adminKey)} {
		if code, _ := w.get(t, "/api/status", auth); code != 200 {
			t.Errorf("GET /api/status with %q: %d, want 200", auth, code)
		}
	}

	// In the browser: the page's answer is 401 (a browser then asks for
	// the key; headless Chromium gives up on the challenge).
	ctx, _ := browser(t, "")
	statuses := make(chan int64, 8)
	if err := chromedp.Listen(ctx, func(ev any) {
		if e, ok := ev.(*network.EventResponseReceivedExtraInfo); ok {
			select {
			case statuses <- e.StatusCode:
			default:
			}
		}
	}); err != nil {
		t.Fatal(err)
	}
	_ = chromedp.Do(ctx, chromedp.Navigate(w.console)) // fails: the challenge is not answered
	select {
	case st := <-statuses:
		if st != 401 {
			t.Errorf("the browser got %d for the page without the key, want 401", st)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the browser saw no answer for the page")
	}
	if n := eval[int](t, ctx, `document.querySelectorAll("svg, table, form").length`); n != 0 {
		t.Errorf("the page without the key has %d console elements", n)
	}
}

func b64(s string) string {
	var b bytes.Buffer
	enc := jsonB64(s)
	b.WriteString(enc)
	return b.String()
}

func jsonB64(s string) string {
	raw, _ := json.Marshal([]byte(s)) // a []byte marshals as standard base64
	return strings.Trim(string(raw), `"`)
}

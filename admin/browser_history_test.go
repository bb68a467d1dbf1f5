package admin_test

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/switchyard/switchyard/mock"
)

// historyWithin bounds how long a request takes to show in a chart: the
// second it ended must be over, then the page's next poll of /api/history
// (every 2 s) draws it.
const historyWithin = 6 * time.Second

// chartJS is the JavaScript expression of a chart's dataset value.
func chartJS(series, metric, field string) string {
	return `(document.querySelector('g.chart[data-series="` + series + `"][data-metric="` + metric + `"]') || {dataset: {}}).dataset.` + field
}

// The console's history in a real browser: a target's and a key's charts
// move when traffic flows; a failover's failures show on the member that
// failed, its successes on the one that answered; the decision list's
// filters keep what they name, live.
func TestConsoleHistoryInBrowser(t *testing.T) {
	w := startWorld(t, true)
	ctx, _ := browser(t, "Bearer "+adminKey)
	if err := chromedp.Do(ctx, chromedp.Navigate(w.console)); err != nil {
		t.Fatal(err)
	}
	waitJS(t, ctx, 10*time.Second, "the charts", `document.querySelectorAll('#svg g.chart[data-metric="req"]').length === 3 && `+chartJS("target:alpha", "req", "requests")+` === "0"`)
	before := eval[string](t, ctx, `document.querySelector('#svg g.chart[data-series="target:alpha"][data-metric="req"] path.req').getAttribute("d")`)

	// Traffic on alpha: its chart and acme's move.
	for i := range 3 {
		if st := w.chat(t, "gpt-4o", ""); st != 200 {
			t.Fatalf("chat %d: %d", i, st)
		}
	}
	took := waitJS(t, ctx, historyWithin, "alpha's traffic in its chart", chartJS("target:alpha", "req", "requests")+` === "3" && `+
		chartJS("key:acme", "req", "requests")+` === "3"`)
	t.Logf("traffic charted %v after the answers", took)
	after := eval[string](t, ctx, `document.querySelector('#svg g.chart[data-series="target:alpha"][data-metric="req"] path.req').getAttribute("d")`)
	if after == before || !strings.HasSuffix(after, "Z") {
		t.Errorf("alpha's chart did not move: %q, then %q", before, after)
	}
	if lat := eval[string](t, ctx, chartJS("target:alpha", "lat", "last")); lat == "" {
		t.Error("alpha's latency chart has no p99")
	}
	if tok := eval[string](t, ctx, chartJS("key:acme", "tok", "last")); tok == "" || tok == "0" {
		t.Errorf("acme's tokens chart shows %q; the mock reports usage", tok)
	}

	// A failover: beta fails, gamma answers. Beta's chart shows two failed
	// calls, gamma's two good ones, alpha's nothing new.
	w.mocks["beta"].Fail(mock.Failure{Status: 503})
	for i := range 2 {
		if st := w.chat(t, "claude-sonnet-4-6", ""); st != 200 {
			t.Fatalf("claude %d: %d", i, st)
		}
	}
	waitJS(t, ctx, historyWithin, "the failover in beta's and gamma's charts",
		chartJS("target:beta", "req", "errors")+` === "2" && `+chartJS("target:gamma", "req", "requests")+` === "2"`)
	for series, want := range map[string]string{"target:gamma": "0", "target:alpha": "0", "key:acme": "0"} {
		if got := eval[string](t, ctx, chartJS(series, "req", "errors")); got != want {
			t.Errorf("%s shows %s failures, want %s", series, got, want)
		}
	}
	// The failures are drawn in red on beta's chart, none on gamma's, and
	// gamma's calls as bars.
	errPath := func(series string) string {
		return eval[string](t, ctx, `document.querySelector('#svg g.chart[data-series="`+series+`"][data-metric="req"] path.err').getAttribute("d")`)
	}
	if d := errPath("target:beta"); !strings.HasSuffix(d, "Z") {
		t.Errorf("beta's failures are not drawn: %q", d)
	}
	if d := errPath("target:gamma"); d != "" {
		t.Errorf("gamma's chart draws failures: %q", d)
	}

	// Filters: five decisions in all; target beta keeps the two claude
	// requests, status 5xx none, key acme with 2xx all five.
	rows := `document.querySelectorAll("#decisions tbody tr").length`
	waitJS(t, ctx, liveWithin, "five decisions", rows+` === 5`)
	filter := func(name, value string) {
		t.Helper()
		eval[bool](t, ctx, `(() => { const s = document.querySelector('#dec-filter select[name=`+name+`]'); s.value = "`+value+`"; s.dispatchEvent(new Event("change", {bubbles: true})); return true; })()`)
	}
	filter("target", "beta")
	waitJS(t, ctx, liveWithin, "the target filter", rows+` === 2 && [...document.querySelectorAll("#decisions tbody tr")].every(r => r.innerText.includes("beta"))`)
	filter("status", "5xx")
	waitJS(t, ctx, liveWithin, "the status filter", rows+` === 0`)
	filter("target", "*")
	filter("status", "2xx")
	filter("key", "acme")
	waitJS(t, ctx, liveWithin, "key and status filters", rows+` === 5`)
	// Live under a filter: a gpt-4o request (alpha) is left out, the
	// claude request after it (gamma: beta's circuit is open) comes in.
	filter("status", "")
	filter("target", "gamma")
	waitJS(t, ctx, liveWithin, "the gamma filter", rows+` === 2`)
	w.chat(t, "gpt-4o", "req-filtered-out")
	w.chat(t, "claude-sonnet-4-6", "req-through-gamma")
	waitJS(t, ctx, liveWithin, "a live decision under a filter", `!!document.querySelector('#decisions tr[data-request-id="req-through-gamma"]')`)
	if n := eval[int](t, ctx, `document.querySelectorAll('#decisions tr[data-request-id="req-filtered-out"]').length`); n != 0 || eval[int](t, ctx, rows) != 3 {
		t.Errorf("the gamma filter shows the alpha request (%d) or %d rows", n, eval[int](t, ctx, rows))
	}
	filter("target", "*")
	waitJS(t, ctx, liveWithin, "every decision again", rows+` === 7`)
	screenshots(t, ctx)
}

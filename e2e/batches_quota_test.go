package e2e

import (
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/switchyard/switchyard/quota"
)

// room returns what key has left of its tokens_per_day.
func (e *batchEnv) room(t *testing.T, key string) int64 {
	t.Helper()
	r, ok := e.d.Gateway().Load().Quota.RoomOf(key, false)
	if !ok || !r.Known {
		t.Fatalf("no room known for %s", key)
	}
	return r.Left[quota.TokensPerDay]
}

// metric returns the /metrics line starting with prefix ("" when none).
func (e *batchEnv) metric(t *testing.T, prefix string) string {
	t.Helper()
	resp, err := e.http.Get(e.base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, prefix) {
			return l
		}
	}
	return ""
}

// estimate is the tokens the gateway reserves for a request with body and
// the default completion estimate.
func estimate(body string) int64 { return quota.Estimate([]byte(body), 1024) }

// TestBatchQuotaOpenAI: creating a batch reserves its lines' estimate
// against tokens_per_day; when it completes the reservation is given back
// and its usage charged once, at the target's batch prices (half of its
// prices), however many reads see it end. Reads count against nothing.
func TestBatchQuotaOpenAI(t *testing.T) {
	e := newBatchEnv(t, batchOptions{euExtra: "      limits: {requests_per_minute: 4, tokens_per_day: 100000, spend_per_day_usd: 1}"})
	bodies := []string{`{"model":"eu-model","messages":[{"role":"user","content":"hi"}]}`,
		`{"model":"eu-model","max_tokens":100,"messages":[{"role":"user","content":"hi"}]}`}
	lines := []string{`{"custom_id":"1","method":"POST","url":"/v1/chat/completions","body":` + bodies[0] + `}`,
		`{"custom_id":"2","method":"POST","url":"/v1/chat/completions","body":` + bodies[1] + `}`}
	file := e.fileID(t, batchEUKey, lines...)
	if got := e.room(t, "eu"); got != 100000 {
		t.Fatalf("room after the upload = %d; an upload reserves no tokens", got)
	}
	_, _, body := e.do(t, "POST", "/v1/batches", batchEUKey, "application/json",
		strings.NewReader(`{"input_file_id":"`+file+`","endpoint":"/v1/chat/completions","completion_window":"24h"}`))
	id := jsonID(t, body)
	want := estimate(bodies[0]) + estimate(bodies[1])
	if got := e.room(t, "eu"); got != 100000-want {
		t.Fatalf("room after the create = %d; want %d (the lines' estimate %d reserved)", got, 100000-want, want)
	}
	for range 4 { // validating → in_progress → completed, then read again
		if status, _, body := e.do(t, "GET", "/v1/batches/"+id, batchEUKey, "", nil); status != 200 {
			t.Fatalf("read = %d %s", status, body)
		}
	}
	prompt, completion := e.azure.Inner().UsageFigures()
	used := int64(2 * (prompt + completion))
	if got := e.room(t, "eu"); got != 100000-used {
		t.Fatalf("room after completion = %d; want %d (the reservation given back, the usage %d charged once)", got, 100000-used, used)
	}
	// eu-model costs 2.5/10 USD per 1M; the batch, half: 1.25/5.
	spend := float64(2*prompt)*1.25 + float64(2*completion)*5 // µUSD
	line := e.metric(t, `switchyard_spend_usd_total{key="eu",target="azure-eu"}`)
	var got float64
	if f := strings.Fields(line); len(f) == 2 {
		json.Unmarshal([]byte(f[1]), &got)
	}
	if got*1e6 < spend-1 || got*1e6 > spend+1 {
		t.Fatalf("spend = %q; want %.0f µUSD at the batch prices", line, spend)
	}
	// Four calls counted (upload, create; the reads did not): two more
	// fit, the third is refused.
	e.fileID(t, batchEUKey, lines...)
	if status, _, body := e.upload(t, batchEUKey, "batch", lines...); status != 200 {
		t.Fatalf("fourth call = %d %s", status, body)
	}
	status, h, body := e.upload(t, batchEUKey, "batch", lines...)
	if status != 429 || !strings.Contains(body, "key_rate_limited") || h.Get("Retry-After") == "" {
		t.Fatalf("fifth call = %d %s; want 429 key_rate_limited with Retry-After", status, body)
	}
}

// TestBatchQuotaRefusesWhatCannotFit: a batch whose estimate is over the
// key's whole tokens_per_day is refused 429 key_budget_exceeded, without
// an upstream call.
func TestBatchQuotaRefusesWhatCannotFit(t *testing.T) {
	e := newBatchEnv(t, batchOptions{acmeExtra: "      limits: {tokens_per_day: 1500}"})
	file := e.fileID(t, batchAcmeKey, chatLine("1", "gpt-4o"), chatLine("2", "gpt-4o"))
	before := e.batchCalls()
	status, _, body := e.do(t, "POST", "/v1/batches", batchAcmeKey, "application/json",
		strings.NewReader(`{"input_file_id":"`+file+`","endpoint":"/v1/chat/completions","completion_window":"24h"}`))
	if status != 429 || !strings.Contains(body, "key_budget_exceeded") {
		t.Fatalf("create = %d %s; want 429 key_budget_exceeded", status, body)
	}
	if e.batchCalls() != before {
		t.Fatal("the refused create reached the target")
	}
	if got := e.room(t, "acme"); got != 1500 {
		t.Fatalf("room after the refusal = %d; want 1500", got)
	}
}

// TestMessageBatchQuota: a message batch reserves its requests' estimate;
// when it is seen ended the reservation is given back, and the gateway
// reads its results itself and charges their usage, once, at the batch
// prices, however often the client reads them afterwards.
func TestMessageBatchQuota(t *testing.T) {
	e := newBatchEnv(t, batchOptions{acmeExtra: "      limits: {tokens_per_day: 100000}"})
	params := `{"model":"claude-x","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`
	_, _, body := e.do(t, "POST", "/v1/messages/batches", batchAcmeKey, "application/json",
		strings.NewReader(`{"requests":[{"custom_id":"a","params":`+params+`},{"custom_id":"b","params":`+params+`}]}`))
	id := jsonID(t, body)
	if got, want := e.room(t, "acme"), 100000-2*estimate(params); got != want {
		t.Fatalf("room after the create = %d; want %d", got, want)
	}
	e.do(t, "GET", "/v1/messages/batches/"+id, batchAcmeKey, "", nil) // ended
	e.d.Batches().WaitMetered()
	prompt, completion := e.claude.UsageFigures()
	if got, want := e.room(t, "acme"), int64(100000-2*(prompt+completion)); got != want {
		t.Fatalf("room once ended = %d; want %d (the reservation given back, the results' usage charged)", got, want)
	}
	for range 2 {
		if status, _, body := e.do(t, "GET", "/v1/messages/batches/"+id+"/results", batchAcmeKey, "", nil); status != 200 ||
			strings.Count(body, "\n") != 2 {
			t.Fatalf("results = %d %s", status, body)
		}
	}
	e.d.Batches().WaitMetered()
	if got, want := e.room(t, "acme"), int64(100000-2*(prompt+completion)); got != want {
		t.Fatalf("room after reading the results twice = %d; want %d (charged once)", got, want)
	}
	spend := float64(2*prompt)*1.5 + float64(2*completion)*7.5 // claude-* 3/15, half
	line := e.metric(t, `switchyard_spend_usd_total{key="acme",target="claude"}`)
	var got float64
	if f := strings.Fields(line); len(f) == 2 {
		json.Unmarshal([]byte(f[1]), &got)
	}
	if got*1e6 < spend-1 || got*1e6 > spend+1 {
		t.Fatalf("spend = %q; want %.0f µUSD", line, spend)
	}
}

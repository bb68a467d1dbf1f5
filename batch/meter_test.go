package batch_test

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	batchpkg "github.com/switchyard/switchyard/batch"
	"github.com/switchyard/switchyard/mock"
	"github.com/switchyard/switchyard/quota"
	"github.com/switchyard/switchyard/tenancy"
	"github.com/switchyard/switchyard/tenancy/tenancytest"
)

const meteredYAML = `
strategy:
  mode: conditional
  conditions:
    - {key: model_prefix, value: claude-, target_key: claude}
targets:
  - {virtual_key: claude, provider: anthropic, base_url: %q}
auth:
  keys:
    - {name: acme, key: ` + aliceKey + `, limits: {tokens_per_day: 10000000}}
`

// TestMessageBatchChargedWhateverTheClientReads: a message batch's usage
// is charged once it is seen ended, whether its client reads the results
// whole, cuts the download before its end, or never downloads them: the
// gateway reads the results itself, once, and charges their usage once.
// It was charged only when the client read the results whole through the
// gateway, so a client that cut the last chunk ran its batch for free.
func TestMessageBatchChargedWhateverTheClientReads(t *testing.T) {
	t.Run("memory", func(t *testing.T) { testMessageBatchCharged(t, tenancy.NewMemoryObjects(0, nil)) })
	t.Run("redis", func(t *testing.T) {
		c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{tenancytest.StartRedis(t)}, DisableCache: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		testMessageBatchCharged(t, tenancy.NewRedisObjects(c, "sy-test:"))
	})
}

func testMessageBatchCharged(t *testing.T, store tenancy.ObjectStore) {
	claude, err := mock.Start("127.0.0.1:0", mock.Options{Name: "claude"})
	if err != nil {
		t.Fatal(err)
	}
	defer claude.Close()
	tg := newTestGateway(t, fmt.Sprintf(meteredYAML, "http://"+claude.Addr()), false, store)
	room := func() int64 {
		t.Helper()
		tg.s.WaitMetered()
		r, ok := tg.g.Load().Quota.RoomOf("acme", false)
		if !ok || !r.Known {
			t.Fatal("no room known for acme")
		}
		return r.Left[quota.TokensPerDay]
	}
	create := func(n int) string {
		t.Helper()
		var b strings.Builder
		b.WriteString(`{"requests":[`)
		for i := range n {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `{"custom_id":"r%d","params":{"model":"claude-x","max_tokens":500,"messages":[{"role":"user","content":"hi"}]}}`, i)
		}
		b.WriteString(`]}`)
		status, answer, _ := tg.do(t, "POST", "/v1/messages/batches", aliceKey, "application/json", []byte(b.String()))
		id := between(answer, `"id":"`, `"`)
		if status != 200 || id == "" {
			t.Fatalf("create = %d %s", status, answer)
		}
		return id
	}
	prompt, completion := claude.UsageFigures()
	per := int64(prompt + completion)
	full := room()

	t.Run("never downloaded", func(t *testing.T) {
		id := create(2)
		if status, answer, _ := tg.do(t, "GET", "/v1/messages/batches/"+id, aliceKey, "", nil); status != 200 ||
			!strings.Contains(answer, `"processing_status":"ended"`) {
			t.Fatalf("read = %d %s", status, answer)
		}
		if got, want := room(), full-2*per; got != want {
			t.Fatalf("room after the batch was seen ended = %d; want %d (its 2 results' usage charged)", got, want)
		}
		full -= 2 * per
	})

	t.Run("download cut", func(t *testing.T) {
		const n = 400 // results of about 120 KB: more than the connection holds in flight
		id := create(n)
		// The batch ends at the provider; the client never polls it
		// through the gateway, and reads only the start of its results.
		resp, err := http.Get(claude.BaseURL() + "/messages/batches/" + id)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		conn, err := tg.dial()
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(conn, "GET /v1/messages/batches/%s/results HTTP/1.1\r\nHost: gw.local\r\nAuthorization: Bearer %s\r\n\r\n", id, aliceKey)
		br := bufio.NewReader(conn)
		status, _ := br.ReadString('\n')
		if !strings.Contains(status, " 200 ") {
			t.Fatalf("results status line %q", status)
		}
		if _, err := io.ReadFull(br, make([]byte, 2048)); err != nil {
			t.Fatal(err)
		}
		conn.Close()
		if got, want := room(), full-n*per; got != want {
			t.Fatalf("room after a cut download = %d; want %d (its %d results' usage charged)", got, want, n)
		}
		full -= n * per
		// Read whole afterwards, twice: nothing more is charged.
		for range 2 {
			if status, answer, _ := tg.do(t, "GET", "/v1/messages/batches/"+id+"/results", aliceKey, "", nil); status != 200 ||
				strings.Count(answer, "\n") != n {
				t.Fatalf("results = %d, %d lines", status, strings.Count(answer, "\n"))
			}
		}
		if got := room(); got != full {
			t.Fatalf("room after reading the results whole twice = %d; want %d (charged once)", got, full)
		}
		if got := claude.BatchStats().Results; got != 5 {
			t.Fatalf("the provider's results were read %d times; want 5 (the gateway once for each of the two batches, the client three times)", got)
		}
	})
}

// TestMessageBatchSlowResultsCharged: results that take longer to read
// than one ownership store call may take are still charged. The store
// call's deadline was set before the read began, so with the Redis store
// the once-only mark always failed after a slow read (a large batch's
// results) and such a batch was never charged, on any later try either.
func TestMessageBatchSlowResultsCharged(t *testing.T) {
	const stall = 300 * time.Millisecond // longer than the store's bound below
	line := func(id string) string {
		return `{"custom_id":"` + id + `","result":{"type":"succeeded","message":{"usage":{"input_tokens":30,"output_tokens":12}}}}` + "\n"
	}
	batch := `{"id":"msgbatch_slow01","type":"message_batch","processing_status":"ended","created_at":"2025-01-02T03:04:05Z","results_url":"x"}`
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == "POST" && r.URL.Path == "/v1/messages/batches",
			r.Method == "GET" && r.URL.Path == "/v1/messages/batches/msgbatch_slow01":
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, batch)
		case r.Method == "GET" && r.URL.Path == "/v1/messages/batches/msgbatch_slow01/results":
			w.Header().Set("Content-Type", "application/binary")
			io.WriteString(w, line("a"))
			w.(http.Flusher).Flush()
			time.Sleep(stall)
			io.WriteString(w, line("b"))
		default:
			http.NotFound(w, r)
		}
	}))
	defer up.Close()
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{tenancytest.StartRedis(t)}, DisableCache: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	tg := newTestGateway(t, fmt.Sprintf(meteredYAML, up.URL), false, tenancy.NewRedisObjects(c, "sy-test:"))
	batchpkg.SetStoreWait(tg.s, stall/3)
	room := func() int64 {
		t.Helper()
		tg.s.WaitMetered()
		r, ok := tg.g.Load().Quota.RoomOf("acme", false)
		if !ok || !r.Known {
			t.Fatal("no room known for acme")
		}
		return r.Left[quota.TokensPerDay]
	}
	full := room()
	body := `{"requests":[{"custom_id":"a","params":{"model":"claude-x","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}},` +
		`{"custom_id":"b","params":{"model":"claude-x","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}}]}`
	if status, answer, _ := tg.do(t, "POST", "/v1/messages/batches", aliceKey, "application/json", []byte(body)); status != 200 {
		t.Fatalf("create = %d %s", status, answer)
	}
	if got, want := room(), full-2*(30+12); got != want {
		t.Fatalf("room after the batch was seen ended = %d; want %d (its 2 results' usage, 84 tokens, charged)", got, want)
	}
}

// TestMessageBatchChargedBeforeDelete: a message batch deleted through the
// gateway before the gateway read its results (never polled through it,
// or its results read still queued after the client's download) is
// charged before the deletion goes: the provider deletes the results with
// the batch, so a metering read after it found nothing and the batch ran
// free, its reservation never given back either.
func TestMessageBatchChargedBeforeDelete(t *testing.T) {
	claude, err := mock.Start("127.0.0.1:0", mock.Options{Name: "claude"})
	if err != nil {
		t.Fatal(err)
	}
	defer claude.Close()
	tg := newTestGateway(t, fmt.Sprintf(meteredYAML, "http://"+claude.Addr()), false, tenancy.NewMemoryObjects(0, nil))
	room := func() int64 {
		t.Helper()
		tg.s.WaitMetered()
		r, ok := tg.g.Load().Quota.RoomOf("acme", false)
		if !ok || !r.Known {
			t.Fatal("no room known for acme")
		}
		return r.Left[quota.TokensPerDay]
	}
	full := room()
	body := `{"requests":[{"custom_id":"a","params":{"model":"claude-x","max_tokens":500,"messages":[{"role":"user","content":"hi"}]}},` +
		`{"custom_id":"b","params":{"model":"claude-x","max_tokens":500,"messages":[{"role":"user","content":"hi"}]}}]}`
	status, answer, _ := tg.do(t, "POST", "/v1/messages/batches", aliceKey, "application/json", []byte(body))
	id := between(answer, `"id":"`, `"`)
	if status != 200 || id == "" || strings.Contains(answer, `"processing_status":"ended"`) {
		t.Fatalf("create = %d %s", status, answer)
	}
	// The batch ends at the provider, unseen by the gateway.
	resp, err := http.Get(claude.BaseURL() + "/messages/batches/" + id)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if status, answer, _ := tg.do(t, "DELETE", "/v1/messages/batches/"+id, aliceKey, "", nil); status != 200 {
		t.Fatalf("delete = %d %s", status, answer)
	}
	prompt, completion := claude.UsageFigures()
	if got, want := room(), full-2*int64(prompt+completion); got != want {
		t.Fatalf("room after the batch was deleted = %d; want %d (its reservation given back, its 2 results' usage charged)", got, want)
	}
	if status, _, _ := tg.do(t, "GET", "/v1/messages/batches/"+id, aliceKey, "", nil); status != 404 {
		t.Fatalf("read after delete = %d; want 404", status)
	}
}

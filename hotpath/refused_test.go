package hotpath

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/switchyard/switchyard/router"
	"github.com/switchyard/switchyard/telemetry"
	"github.com/switchyard/switchyard/upstream"
)

// generatedID matches an id the gateway generated (reqid.go).
var generatedID = regexp.MustCompile(`^[0-9a-f]{12}-[0-9a-f]{16}$`)

// rawExchange writes raw to a fresh TCP connection to tg and reads one
// response.
func rawExchange(t *testing.T, tg *testGateway, raw string) *fasthttp.Response {
	t.Helper()
	conn, err := netDial(tg.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte(raw)); err != nil {
		t.Fatal(err)
	}
	resp := &fasthttp.Response{}
	if err := resp.Read(bufioReader(conn)); err != nil {
		t.Fatal(err)
	}
	return resp
}

// noMoreRecords fails if a record arrives within a short grace period.
func noMoreRecords(t *testing.T, rec *recorder, what string) {
	t.Helper()
	select {
	case <-rec.ch:
		rec.mu.Lock()
		defer rec.mu.Unlock()
		t.Errorf("%s: an extra record %+v", what, rec.recs)
	case <-time.After(50 * time.Millisecond):
	}
}

// A request fasthttp refuses while reading it (here a Content-Length over
// max_request_bytes, refused from the headers through HeaderReceived) gets
// exactly one Finished record, on the surface of its path, and echoes the
// client's X-Request-Id; an invalid client id is replaced by a generated one.
func TestBodyTooLargeIsRecordedWithRequestID(t *testing.T) {
	a, b, c := threeMocks(t)
	// With reduce_memory_usage fasthttp reads bodies itself, so this 413
	// comes from its error handler (without it the handler refuses a
	// streamed body: TestBodyLimitAppliedBeforeTheBodyIsRead).
	tg := startGateway(t, strings.Replace(baseConfig, "server:\n", "server:\n  reduce_memory_usage: true\n", 1), a, b, c)
	rec := newRecorder()
	tg.g.Finished = rec.finished

	resp := rawExchange(t, tg, "POST /v1/embeddings HTTP/1.1\r\nHost: localhost\r\nX-Request-Id: big-1\r\n"+
		"Content-Type: application/json\r\nContent-Length: 5000\r\n\r\n")
	if resp.StatusCode() != 413 || string(resp.Header.Peek("X-Request-Id")) != "big-1" {
		t.Fatalf("got %d, X-Request-Id %q", resp.StatusCode(), resp.Header.Peek("X-Request-Id"))
	}
	want := record{RequestID: "big-1", Surface: router.SurfaceEmbeddings, Rule: telemetry.RuleNotRouted,
		Status: 413, Class: upstream.ClassClient}
	if got := rec.next(t); !recordsEqual(got, want) {
		t.Errorf("413 record\n got %+v\nwant %+v", got, want)
	}
	noMoreRecords(t, rec, "413")

	// Off the API paths the surface is "none"; a bad id is not echoed.
	resp = rawExchange(t, tg, "POST /elsewhere HTTP/1.1\r\nHost: localhost\r\nX-Request-Id: bad id\r\n"+
		"Content-Length: 5000\r\n\r\n")
	id := string(resp.Header.Peek("X-Request-Id"))
	if resp.StatusCode() != 413 || !generatedID.MatchString(id) {
		t.Fatalf("got %d, X-Request-Id %q", resp.StatusCode(), id)
	}
	want = record{RequestID: id, Surface: telemetry.SurfaceNone, Rule: telemetry.RuleNotRouted,
		Status: 413, Class: upstream.ClassClient}
	if got := rec.next(t); !recordsEqual(got, want) {
		t.Errorf("413 off-API record\n got %+v\nwant %+v", got, want)
	}
	noCalls(t, a, b, c)
}

// Requests whose headers fasthttp cannot read (too large: 431; malformed:
// 400) are recorded with surface "none" and a generated id.
func TestUnreadableRequestsAreRecorded(t *testing.T) {
	a, b, c := threeMocks(t)
	tg := startGateway(t, baseConfig, a, b, c)
	rec := newRecorder()
	tg.g.Finished = rec.finished
	for _, tc := range []struct {
		name   string
		raw    string
		status int
	}{
		{"headers too large", "POST /v1/chat/completions HTTP/1.1\r\nHost: localhost\r\nX-Big: " +
			strings.Repeat("a", ReadBufferSize) + "\r\n\r\n", 431},
		{"malformed", "POST /v1/chat/completions HTTP/1.1\r\nHost: localhost\r\nContent-Length: zz\r\n\r\n", 400},
	} {
		resp := rawExchange(t, tg, tc.raw)
		id := string(resp.Header.Peek("X-Request-Id"))
		if resp.StatusCode() != tc.status || !generatedID.MatchString(id) {
			t.Fatalf("%s: got %d, X-Request-Id %q", tc.name, resp.StatusCode(), id)
		}
		want := record{RequestID: id, Surface: telemetry.SurfaceNone, Rule: telemetry.RuleNotRouted,
			Status: tc.status, Class: upstream.ClassClient}
		if got := rec.next(t); !recordsEqual(got, want) {
			t.Errorf("%s record\n got %+v\nwant %+v", tc.name, got, want)
		}
		noMoreRecords(t, rec, tc.name)
	}
	noCalls(t, a, b, c)
}

// An unknown path (404) and a wrong method (405), on an API path or on the
// gateway's own endpoints, each get one record and an X-Request-Id; a GET of
// the gateway's own endpoints gets an id but no record.
func TestUnroutedAnswersAreRecordedWithRequestID(t *testing.T) {
	a, b, c := threeMocks(t)
	tg := startGateway(t, baseConfig, a, b, c)
	rec := newRecorder()
	tg.g.Finished = rec.finished
	for _, tc := range []struct {
		method, path, id string
		status           int
		surface          router.Surface
	}{
		{"GET", "/v1/nope", "id-404", 404, telemetry.SurfaceNone},
		{"POST", "/", "", 404, telemetry.SurfaceNone},
		{"GET", "/v1/chat/completions", "id-405", 405, router.SurfaceChat},
		{"PUT", "/v1/images/generations", "", 405, router.SurfaceImages},
		{"POST", "/healthz", "id-405h", 405, telemetry.SurfaceNone},
	} {
		var hdr []string
		if tc.id != "" {
			hdr = []string{"X-Request-Id", tc.id}
		}
		r := tg.do(tc.method, tc.path, "", hdr...)
		id := r.Header["X-Request-Id"]
		if r.Status != tc.status || (tc.id != "" && id != tc.id) || (tc.id == "" && !generatedID.MatchString(id)) {
			t.Fatalf("%s %s: got %d, X-Request-Id %q", tc.method, tc.path, r.Status, id)
		}
		want := record{RequestID: id, Surface: tc.surface, Rule: telemetry.RuleNotRouted,
			Status: tc.status, Class: upstream.ClassClient}
		if got := rec.next(t); !recordsEqual(got, want) {
			t.Errorf("%s %s record\n got %+v\nwant %+v", tc.method, tc.path, got, want)
		}
		noMoreRecords(t, rec, tc.method+" "+tc.path)
	}
	for _, p := range []string{"/healthz", "/readyz", "/v1/models"} {
		r := tg.do("GET", p, "", "X-Request-Id", "probe-1")
		if r.Status != 200 || r.Header["X-Request-Id"] != "probe-1" {
			t.Errorf("GET %s: %d, X-Request-Id %q", p, r.Status, r.Header["X-Request-Id"])
		}
	}
	noMoreRecords(t, rec, "probes")
	noCalls(t, a, b, c)
}

package hotpath

import (
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/redis/rueidis"
	"github.com/valyala/fasthttp"

	"github.com/switchyard/switchyard/tenancy"
	"github.com/switchyard/switchyard/tenancy/tenancytest"
)

// responsesMock answers POST /v1/responses with a fresh id (resp_N) and
// one output item (msg_N), as a JSON answer or a stream whose first event
// is response.created and last response.completed, and records the bodies
// it received. It answers any other path the same way.
type responsesMock struct {
	url    string
	n      atomic.Int64
	mu     sync.Mutex
	bodies []string
}

func startResponsesMock(t *testing.T) *responsesMock {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	m := &responsesMock{url: "http://" + ln.Addr().String() + "/v1"}
	srv := &fasthttp.Server{Logger: quietLogger{}, Handler: func(rc *fasthttp.RequestCtx) {
		n := strconv.FormatInt(m.n.Add(1), 10)
		id, item := "resp_"+n, `{"id":"msg_`+n+`","type":"message","role":"assistant","content":[]}`
		m.mu.Lock()
		m.bodies = append(m.bodies, string(rc.PostBody()))
		m.mu.Unlock()
		if strings.Contains(string(rc.PostBody()), `"stream":true`) {
			rc.SetContentType("text/event-stream")
			rc.SetBodyString("event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"id\":\"" + id + "\",\"object\":\"response\",\"status\":\"in_progress\"}}\n\n" +
				"event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"id\":\"" + id + "\",\"status\":\"completed\",\"output\":[" + item + "]}}\n\n")
			return
		}
		rc.SetContentType("application/json")
		rc.SetBodyString(`{"id":"` + id + `","object":"response","status":"completed","output":[` + item + `]}`)
	}}
	go srv.Serve(ln) //nolint:errcheck // ends at Shutdown
	t.Cleanup(func() { _ = srv.Shutdown() })
	return m
}

func (m *responsesMock) calls() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.bodies)
}

func (m *responsesMock) last() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.bodies[len(m.bodies)-1]
}

const ownersYAML = `
strategy: {mode: conditional, conditions: [{key: model, value: x, target_key: up}]}
targets:
  - {virtual_key: up, provider: openai, base_url: "URL"}
auth:
  keys:
    - {name: acme, key: sy-acme}
    - {name: globex, key: sy-globex}
`

// createdID extracts the response id from an answer (JSON or stream).
func createdID(t *testing.T, body string) string {
	t.Helper()
	i := strings.Index(body, `"id":"resp_`)
	if i < 0 {
		t.Fatalf("no response id in %s", body)
	}
	rest := body[i+len(`"id":"`):]
	return rest[:strings.IndexByte(rest, '"')]
}

func checkOwnership(t *testing.T, create, other, same *testGateway, up *responsesMock, stream bool) {
	t.Helper()
	s := ""
	if stream {
		s = `,"stream":true`
	}
	r := create.do("POST", "/v1/responses", `{"model":"x","input":"hi"`+s+`}`, "Authorization", "Bearer sy-acme")
	if r.Status != 200 {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	id := createdID(t, r.Body)
	follow := `{"model":"x","previous_response_id":"` + id + `","input":"more"` + s + `}`

	// Another key: 404 response_not_found, no upstream call.
	before := up.calls()
	r = other.do("POST", "/v1/responses", follow, "Authorization", "Bearer sy-globex")
	want := envelope(`previous_response_id "`+id+`" was not found`, "invalid_request_error", "response_not_found")
	if r.Status != 404 || r.Body != want {
		t.Errorf("globex continuing %s: %d %s; want 404 %s", id, r.Status, r.Body, want)
	}
	// An id nobody created: the same answer.
	r = other.do("POST", "/v1/responses", strings.Replace(follow, id, "resp_never", 1), "Authorization", "Bearer sy-globex")
	if r.Status != 404 || !strings.Contains(r.Body, "response_not_found") {
		t.Errorf("unknown id: %d %s", r.Status, r.Body)
	}
	if up.calls() != before {
		t.Fatalf("a refused request reached the upstream")
	}
	// The same key: forwarded unchanged.
	r = same.do("POST", "/v1/responses", follow, "Authorization", "Bearer sy-acme")
	if r.Status != 200 || up.calls() != before+1 || up.last() != follow {
		t.Fatalf("acme continuing %s: %d %s; upstream got %q", id, r.Status, r.Body, up.last())
	}
}

func TestResponseOwnershipMemory(t *testing.T) {
	up := startResponsesMock(t)
	tg := startGateway(t, strings.Replace(ownersYAML, "URL", up.url, 1))
	tg.g.Owners = tenancy.NewMemory(0, nil)
	for _, stream := range []bool{false, true} {
		checkOwnership(t, tg, tg, tg, up, stream)
	}
}

func TestResponseOwnershipAcrossReplicasSharingRedis(t *testing.T) {
	addr := tenancytest.StartRedis(t)
	up := startResponsesMock(t)
	var gws []*testGateway
	for range 3 {
		tg := startGateway(t, strings.Replace(ownersYAML, "URL", up.url, 1))
		c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, DisableCache: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		tg.g.Owners = tenancy.NewRedis(c, "switchyard:")
		gws = append(gws, tg)
	}
	for _, stream := range []bool{false, true} {
		// Created on replica 0, refused on replica 1, continued on 2.
		checkOwnership(t, gws[0], gws[1], gws[2], up, stream)
	}
}

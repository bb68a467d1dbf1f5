package admin

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchyard/switchyard/config"
	"github.com/switchyard/switchyard/telemetry"
)

type decisionsAnswer struct {
	Decisions []struct {
		Seq    uint64   `json:"seq"`
		Key    string   `json:"key"`
		Status int      `json:"status"`
		Tried  []string `json:"tried"`
	} `json:"decisions"`
	Next uint64 `json:"next"`
}

func getDecisions(t *testing.T, s *Server, uri string) (int, decisionsAnswer) {
	t.Helper()
	code, body, _ := do(s, uri, "127.0.0.1", "")
	var a decisionsAnswer
	if code == 200 {
		if err := json.Unmarshal([]byte(body), &a); err != nil || a.Decisions == nil {
			t.Fatalf("%s: %v: %s", uri, err, body)
		}
	}
	return code, a
}

// Without after, /api/decisions answers at once, also on an idle gateway
// and whatever wait says; with after it waits for a decision.
func TestDecisionsWithoutAfterAnswerAtOnce(t *testing.T) {
	s, _ := newTestServer(t, config.Admin{Listen: "127.0.0.1:9090"}, nil)
	rec := s.opts.Recorder
	s.pause = func(time.Duration) { t.Fatal("the answer waited") }
	for _, uri := range []string{"/api/decisions", "/api/decisions?wait=30", "/api/decisions?key=acme&status=5xx"} {
		if code, a := getDecisions(t, s, uri); code != 200 || len(a.Decisions) != 0 || a.Next != 0 {
			t.Errorf("%s on an idle gateway: %d %+v", uri, code, a)
		}
	}
	for i := range 3 {
		rec.Finished(&telemetry.Entry{Key: "acme", Status: 200 + i})
	}
	if code, a := getDecisions(t, s, "/api/decisions"); code != 200 || len(a.Decisions) != 3 || a.Decisions[2].Seq != 3 || a.Next != 3 {
		t.Errorf("the newest: %d %+v", code, a)
	}

	// With after, the answer waits until a decision comes.
	waited := 0
	s.pause = func(time.Duration) {
		waited++
		if waited == 2 {
			rec.Finished(&telemetry.Entry{Key: "acme", Status: 418})
		}
	}
	if code, a := getDecisions(t, s, "/api/decisions?after=3"); code != 200 || len(a.Decisions) != 1 || a.Decisions[0].Status != 418 ||
		a.Next != 4 || waited != 2 {
		t.Errorf("long poll: %d %+v after %d pauses", code, a, waited)
	}
	// wait=0 answers at once.
	s.pause = func(time.Duration) { t.Fatal("wait=0 waited") }
	if code, a := getDecisions(t, s, "/api/decisions?after=4&wait=0"); code != 200 || len(a.Decisions) != 0 || a.Next != 4 {
		t.Errorf("wait=0: %d %+v", code, a)
	}
}

// Over a real listener: an idle console answers GET /api/decisions (a
// plain curl) rather than holding it for the long-poll's 25 s.
func TestDecisionsIdleOverHTTP(t *testing.T) {
	s, _ := newTestServer(t, config.Admin{Listen: "127.0.0.1:9090"}, nil)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = s.Serve(ln) }()
	t.Cleanup(func() { _ = s.Shutdown() })
	// The timeout only keeps a regression from hanging the suite; the
	// answer comes at once.
	c := &http.Client{Timeout: 15 * time.Second}
	resp, err := c.Get(fmt.Sprintf("http://%s/api/decisions", ln.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || string(body) != `{"decisions":[],"next":0,"dropped":0}` {
		t.Errorf("%d %s", resp.StatusCode, body)
	}
}

func TestDecisionsFilters(t *testing.T) {
	s, _ := newTestServer(t, config.Admin{Listen: "127.0.0.1:9090"}, nil)
	s.pause = func(time.Duration) { t.Fatal("waited") }
	rec := s.opts.Recorder
	for _, e := range []telemetry.Entry{
		{Key: "acme", Status: 200, Walked: []string{"a"}, Target: "a"},      // 1
		{Key: "acme", Status: 503, Walked: []string{"a", "b"}, Target: "b"}, // 2
		{Key: "", Status: 401}, // 3
		{Key: "acme", Status: 429, Walked: []string{"b"}, Target: "b"},             // 4
		{Key: "acme", Status: 200, Walked: []string{"b", "a"}, Target: "a"},        // 5
		{Key: "other", Status: 502, Walked: []string{"a"}, Target: "a"},            // 6: a removed key still lists
		{Key: "acme", Status: 404, Walked: nil, Target: "", Rule: -1, Attempts: 0}, // 7
	} {
		rec.Finished(&e)
	}
	seqs := func(a decisionsAnswer) []uint64 {
		var out []uint64
		for _, d := range a.Decisions {
			out = append(out, d.Seq)
		}
		return out
	}
	for uri, want := range map[string][]uint64{
		"/api/decisions":                              {1, 2, 3, 4, 5, 6, 7},
		"/api/decisions?key=acme":                     {1, 2, 4, 5, 7},
		"/api/decisions?key=":                         {3},
		"/api/decisions?target=b":                     {2, 4, 5},
		"/api/decisions?target=a&status=200":          {1, 5},
		"/api/decisions?status=5xx":                   {2, 6},
		"/api/decisions?status=4xx":                   {3, 4, 7},
		"/api/decisions?status=error":                 {2, 3, 4, 6, 7},
		"/api/decisions?status=2xx&key=acme":          {1, 5},
		"/api/decisions?key=acme&target=b&after=3":    {4, 5},
		"/api/decisions?target=nobody&after=0&wait=0": nil,
	} {
		code, a := getDecisions(t, s, uri)
		if code != 200 || !slices.Equal(seqs(a), want) || a.Next != 7 {
			t.Errorf("%s: %d %v next %d; want %v next 7", uri, code, seqs(a), a.Next, want)
		}
	}
	for _, bad := range []string{"status=abc", "status=6xx", "status=99", "status=1000", "wait=NaN&after=1"} {
		if code, _ := getDecisions(t, s, "/api/decisions?"+bad); code != 400 {
			t.Errorf("%s: %d, want 400", bad, code)
		}
	}

	// A filtered long poll ends with a matching decision only; the ones
	// that do not match move next on.
	pauses := 0
	s.pause = func(time.Duration) {
		pauses++
		switch pauses {
		case 1:
			rec.Finished(&telemetry.Entry{Key: "acme", Status: 200, Walked: []string{"a"}})
		case 3:
			rec.Finished(&telemetry.Entry{Key: "acme", Status: 503, Walked: []string{"a", "b"}})
		}
	}
	if code, a := getDecisions(t, s, "/api/decisions?after=7&status=5xx"); code != 200 || !slices.Equal(seqs(a), []uint64{9}) || a.Next != 9 || pauses != 3 {
		t.Errorf("filtered long poll: %d %v next %d after %d pauses", code, seqs(a), a.Next, pauses)
	}
}

// Shutdown ends a long poll at once: a console left open does not hold
// the gateway's shutdown for the poll's 25 s.
func TestDecisionsLongPollEndsAtShutdown(t *testing.T) {
	s, _ := newTestServer(t, config.Admin{Listen: "127.0.0.1:9090"}, nil)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = s.Serve(ln) }()
	polling := make(chan struct{}, 1)
	var pauses atomic.Int64
	s.pause = func(d time.Duration) {
		pauses.Add(1)
		select {
		case polling <- struct{}{}:
		default:
		}
		s.sleep(d)
	}
	type result struct {
		code int
		body string
		err  error
	}
	done := make(chan result, 1)
	go func() {
		c := &http.Client{Timeout: 60 * time.Second}
		resp, err := c.Get(fmt.Sprintf("http://%s/api/decisions?after=0&wait=55", ln.Addr()))
		if err != nil {
			done <- result{err: err}
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		done <- result{code: resp.StatusCode, body: string(b)}
	}()
	<-polling
	if err := s.Shutdown(); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil || r.code != 200 || r.body != `{"decisions":[],"next":0,"dropped":0}` {
		t.Errorf("the long poll at shutdown: %d %q %v", r.code, r.body, r.err)
	}
	// It answered because of the shutdown, not its deadline: it did not
	// look at the ring again after the pause Shutdown cut short.
	if n := pauses.Load(); n > 2 {
		t.Errorf("the long poll paused %d times; after Shutdown it must answer", n)
	}
}

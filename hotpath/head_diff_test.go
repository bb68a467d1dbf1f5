package hotpath

import (
	"bufio"
	"bytes"
	"math/rand/v2"
	"net"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/valyala/fasthttp"

	"github.com/switchyard/switchyard/router"
	"github.com/switchyard/switchyard/upstream"
)

// nonLoopbackConnStub is loopbackConnStub accepted on a LAN address.
type nonLoopbackConnStub struct{ loopbackConnStub }

var stubLAN = &net.TCPAddr{IP: net.IPv4(10, 0, 0, 7), Port: 8080}

func (nonLoopbackConnStub) LocalAddr() net.Addr { return stubLAN }

// headFields are the names the pass records, with the values an attacker
// or a sloppy client would send them.
var headFields = []struct {
	name   string
	values []string
}{
	{"transfer-encoding", []string{"chunked", "Chunked", "identity", "chunked, identity", "gzip, chunked", ""}},
	{"content-length", []string{"0", "2", " 0", "00"}},
	{"origin", []string{"https://app.example.com", "HTTPS://APP.example.com", "https://evil.example", "null", ""}},
	{"x-gateway-metadata", []string{`{"tier":"gold"}`, "", "{}", `{"tier":"gold"} `, "nope", `{"a":"x y"}`}},
	{"authorization", []string{"Bearer sy-open", "bearer  sy-open ", "Bearer sy-other", "Basic sy-open", "Bearer", "Bearersy-open", "Bearer\tsy-open", ""}},
	{"x-api-key", []string{"sy-open", "sy-other", "", " sy-open\t"}},
	{"traceparent", []string{"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "00-4BF92F3577B34DA6A3CE929D0E0E4736-00F067AA0BA902B7-01",
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01 ", "cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-later", "00-xyz", ""}},
	{"tracestate", []string{"rojo=00f067aa0ba902b7,congo=t61rcWkgMzE", "a=1", "", " b=2 "}},
}

// nearNames are names a sloppy match would take for one of the above.
var nearNames = []string{"origins", "origi", "x-api-keys", "x-api-ke", "x-gateway-metadat", "x-gateway-metadatax",
	"authorizations", "transfer-encodingx", "traceparentx", "tracestat", "content-lengths", "trace", "accept", "user-agent", "x-request-id"}

// randomCase spells name in a random mix of cases.
func randomCase(r *rand.Rand, name string) string {
	b := []byte(name)
	for i, c := range b {
		if 'a' <= c && c <= 'z' && r.IntN(2) == 0 {
			b[i] = c - 'a' + 'A'
		}
	}
	return string(b)
}

// randomOWS is whitespace a client may put around a value.
func randomOWS(r *rand.Rand) string {
	return []string{"", "", " ", "  ", "\t", " \t"}[r.IntN(6)]
}

// randomSection returns header lines (no Host, no end) as a client could
// send them: repeats, case variants, near names, empty values, whitespace
// around values, folded continuation lines and bare LF line ends.
func randomSection(r *rand.Rand) string {
	var b strings.Builder
	for range r.IntN(10) {
		switch k := r.IntN(12); {
		case k < 8:
			f := headFields[r.IntN(len(headFields))]
			b.WriteString(randomCase(r, f.name) + ":" + randomOWS(r) + f.values[r.IntN(len(f.values))] + randomOWS(r))
		case k < 10:
			b.WriteString(randomCase(r, nearNames[r.IntN(len(nearNames))]) + ":" + randomOWS(r) + "v")
		case k < 11:
			b.WriteString([]string{" ", "\t", "  "}[r.IntN(3)] + "folded" + randomOWS(r))
		default:
			b.WriteString("X-Other:" + randomOWS(r))
		}
		if r.IntN(8) == 0 {
			b.WriteString("\n")
		} else {
			b.WriteString("\r\n")
		}
	}
	return b.String()
}

// folded reports whether a header section has a continuation line (its
// first refusal may be another: h.early keeps only the first).
func folded(raw []byte) bool {
	s := fieldLines{raw: raw}
	for {
		line, ok := s.next()
		if !ok {
			return false
		}
		if line[0] == ' ' || line[0] == '\t' {
			return true
		}
	}
}

// sameBytes reports whether a and b are the same slice of the same bytes
// (both nil, or equal and at one address).
func sameBytes(a, b []byte) bool {
	if (a == nil) != (b == nil) || !bytes.Equal(a, b) {
		return false
	}
	return len(a) == 0 || unsafe.SliceData(a) == unsafe.SliceData(b)
}

// TestHeadMatchesSeparatePasses: for random and adversarial header
// sections that fasthttp hands the handler, the one pass (head.scan) gives
// exactly the answers the separate walks over the section gave (the ref*
// functions and headerField, head_ref_test.go; the trace context through
// PeekAll): the same refusal on loopback and other connections, the same
// client key verdict and answer, the same metadata, Origin, key and trace
// values at the same addresses, and the same trace context to forward.
func TestHeadMatchesSeparatePasses(t *testing.T) {
	st, err := Build(mustParse(t, `
server:
  allowed_hosts: [gw.internal]
  allowed_origins: ["https://app.example.com"]
strategy: {mode: conditional, conditions: [{key: model, value: m, target_key: a}]}
targets: [{virtual_key: a, provider: openai, base_url: "http://127.0.0.1:1/v1"}]
auth: {keys: [{name: open, key: sy-open}]}
`), upstream.NewPool(), time.Unix(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	hosts := []string{"localhost", "127.0.0.1:8080", "GW.internal", "rebind.evil.example", "[::1]:1"}
	r := rand.New(rand.NewPCG(1, 2))
	seen := map[string]int{}
	parsed := 0
	const runs = 30000
	for range runs {
		// One request in four names an authority in its request line
		// (absolute form), the same as its Host or another.
		target := "/v1/chat/completions"
		if r.IntN(4) == 0 {
			target = "http://" + hosts[r.IntN(len(hosts))] + target
		}
		head0 := "POST " + target + " HTTP/1.1\r\nHost: " + hosts[r.IntN(len(hosts))] + "\r\n" + randomSection(r) + "\r\n"
		var hdr fasthttp.RequestHeader
		if err := hdr.Read(bufio.NewReader(strings.NewReader(head0))); err != nil {
			seen["fasthttp refused"]++
			continue // never reaches the handler
		}
		parsed++
		for _, loop := range []bool{true, false} {
			var rc fasthttp.RequestCtx
			if loop {
				rc.Init2(loopbackConnStub{}, nil, false)
			} else {
				rc.Init2(nonLoopbackConnStub{}, nil, false)
			}
			hdr.CopyTo(&rc.Request.Header)
			raw := rc.Request.Header.RawHeaders()
			var h head
			h.scan(&rc.Request.Header)
			want := refScreen(&rc, st)
			if got := screenHead(&rc, st, &h, loopbackConn(&rc)); got != want {
				t.Fatalf("loopback %v: screen %d, the separate pass %d, for\n%q", loop, got, want, head0)
			}
			seen["screen "+string(rune('0'+want))]++
			if !loop {
				continue
			}
			// Each recorded field: the count and the first value, at the
			// same address, as a walk for that one name finds them.
			for _, f := range []struct {
				name string
				v    []byte
				n    int
			}{
				{headerMetadataLower, h.meta, h.nMeta}, {"origin", h.origin, h.nOrigin},
				{"authorization", h.auth, h.nAuth}, {"x-api-key", h.apiKey, h.nAPIKey},
				{"traceparent", h.parent, h.nParent}, {"tracestate", h.state, h.nState},
			} {
				v, n := headerField(raw, f.name)
				if n != f.n || !sameBytes(v, f.v) {
					t.Fatalf("%s: %q ×%d, the separate pass %q ×%d, for\n%q", f.name, f.v, f.n, v, n, head0)
				}
			}
			if _, n := headerField(raw, "transfer-encoding"); n != h.nTE && h.early == refusedNone {
				t.Fatalf("transfer-encoding ×%d, the separate pass ×%d", h.nTE, n)
			}
			if _, n := headerField(raw, "content-length"); n != h.nCL {
				t.Fatalf("content-length ×%d, the separate pass ×%d", h.nCL, n)
			}
			// The client key check: verdict, key and the whole answer.
			var ref fasthttp.RequestCtx
			hdr.CopyTo(&ref.Request.Header)
			wk, wok := refAuthenticate(&ref, st, router.SurfaceChat)
			gk, gok := authenticateHead(&rc, st, router.SurfaceChat, &h)
			if gk != wk || gok != wok || rc.Response.StatusCode() != ref.Response.StatusCode() ||
				!bytes.Equal(rc.Response.Body(), ref.Response.Body()) ||
				!bytes.Equal(rc.Response.Header.Peek("WWW-Authenticate"), ref.Response.Header.Peek("WWW-Authenticate")) {
				t.Fatalf("key %v %v %d %s, the separate pass %v %v %d %s, for\n%q", gk, gok, rc.Response.StatusCode(), rc.Response.Body(),
					wk, wok, ref.Response.StatusCode(), ref.Response.Body(), head0)
			}
			seen["auth "+string(rune('0'+ref.Response.StatusCode()/100))]++
			// The trace context: what the walk forwards and the access log
			// records, as read through fasthttp's view before. Not for a
			// folded section: fasthttp joins the continuation into the
			// value, the pass does not, and the screen refuses it before
			// anything reads a trace context (a refused request's log line
			// reads it through fasthttp's view still: upstream.TraceID).
			if folded(raw) {
				continue
			}
			wp, ws := refTraceContext(&hdr)
			gp, gs := h.trace()
			if !bytes.Equal(gp, wp) || !bytes.Equal(gs, ws) || (gp == nil) != (wp == nil) || (gs == nil) != (ws == nil) {
				t.Fatalf("trace %q %q, through PeekAll %q %q, for\n%q", gp, gs, wp, ws, head0)
			}
			if got, want := upstream.TraceIDOf(gp), upstream.TraceID(&hdr); !bytes.Equal(got, want) || (got == nil) != (want == nil) {
				t.Fatalf("trace id %q, through PeekAll %q", got, want)
			}
			if gp != nil {
				seen["trace forwarded"]++
			}
			if gs != nil {
				seen["tracestate forwarded"]++
			}
		}
	}
	// The sections exercised every answer, or the comparison proves little.
	for _, k := range []string{"fasthttp refused", "screen 0", "screen 1", "screen 2", "screen 3", "screen 4", "screen 5",
		"auth 2", "auth 4", "trace forwarded", "tracestate forwarded"} {
		if seen[k] < 20 {
			t.Errorf("only %d sections with %q: %v", seen[k], k, seen)
		}
	}
	t.Logf("%d parsed, %v", parsed, seen)
	if parsed < runs/3 {
		t.Errorf("fasthttp took only %d of %d sections", parsed, runs)
	}
}

// A request built in code has no header section as received: the pass
// finds no field in it but reads its trace context through fasthttp's
// view, as the walk always did.
func TestHeadOfRequestBuiltInCode(t *testing.T) {
	const parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	var hdr fasthttp.RequestHeader
	hdr.Set("traceparent", parent)
	hdr.Set("tracestate", "a=1")
	hdr.Set("Origin", "https://evil.example")
	hdr.Set(headerMetadata, "{}")
	var h head
	h.scan(&hdr)
	if p, s := h.trace(); string(p) != parent || string(s) != "a=1" {
		t.Fatalf("trace %q %q", p, s)
	}
	if h.nOrigin != 0 || h.nMeta != 0 {
		t.Fatalf("fields found without a section: %+v", h)
	}
	hdr.Add("traceparent", parent)
	if h.scan(&hdr); h.nParent != 2 {
		t.Fatalf("repeated traceparent counted %d", h.nParent)
	}
	if p, _ := h.trace(); p != nil {
		t.Fatalf("a repeated traceparent forwarded as %q", p)
	}
}

// The loopback question is decided once for a listener bound to one
// address, and asked of each connection otherwise.
func TestOnLoopback(t *testing.T) {
	var loop, lan fasthttp.RequestCtx
	loop.Init2(loopbackConnStub{}, nil, false)
	lan.Init2(nonLoopbackConnStub{}, nil, false)
	addr := func(s string) net.Addr { return &net.TCPAddr{IP: net.ParseIP(s), Port: 1} }
	for _, tc := range []struct {
		name      string
		listeners []net.Addr
		loop, lan bool // the answer on a loopback and on a LAN connection
	}{
		{"not told", nil, true, false},
		{"127.0.0.1", []net.Addr{addr("127.0.0.1")}, true, true},
		{"127.0.0.2", []net.Addr{addr("127.0.0.2")}, true, true},
		{"[::1]", []net.Addr{addr("::1")}, true, true},
		{"10.0.0.7", []net.Addr{addr("10.0.0.7")}, false, false},
		{"0.0.0.0", []net.Addr{addr("0.0.0.0")}, true, false},
		{"[::]", []net.Addr{addr("::")}, true, false},
		{"no IP", []net.Addr{&net.TCPAddr{Port: 1}}, true, false},
		{"unix", []net.Addr{&net.UnixAddr{Name: "/x", Net: "unix"}}, true, false},
		{"twice the same", []net.Addr{addr("127.0.0.1"), addr("127.0.0.1")}, true, true},
		{"two that disagree", []net.Addr{addr("127.0.0.1"), addr("10.0.0.7")}, true, false},
	} {
		g := New(nil)
		for _, a := range tc.listeners {
			g.SetListenAddr(a)
		}
		if got := g.onLoopback(&loop); got != tc.loop {
			t.Errorf("%s: loopback connection: %v", tc.name, got)
		}
		if got := g.onLoopback(&lan); got != tc.lan {
			t.Errorf("%s: LAN connection: %v", tc.name, got)
		}
	}
}

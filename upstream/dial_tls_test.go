package upstream

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/switchyard/switchyard/config"
)

// goroutineID returns the calling goroutine's id, from its stack header.
func goroutineID() string {
	b := make([]byte, 64)
	b = b[:runtime.Stack(b, false)]
	b = bytes.TrimPrefix(b, []byte("goroutine "))
	return string(b[:bytes.IndexByte(b, ' ')])
}

// tlsTarget is a Target of an https test server, its certificate trusted.
func tlsTarget(t *testing.T, srv *httptest.Server) *Target {
	t.Helper()
	tg, err := NewPool().Target(&config.Target{
		VirtualKey: "a", Provider: config.ProviderOpenAI, BaseURL: srv.URL + "/v1", APIKey: "sk-a",
		Timeout: 5 * time.Second, Retry: config.Retry{Attempts: 1},
		Concurrency: config.Concurrency{MaxConcurrency: 4, QueueSize: 4},
	})
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(srv.Certificate())
	tg.client().TLSConfig.RootCAs = roots
	return tg
}

// TestTLSHandshakeRunsAside: a TLS connection comes out of the
// HostClient's Dial handshaken (so fasthttp does not handshake again),
// verified against the target's host, on a goroutine other than the
// caller's (whose stack then stays shallow; see connectTLS), and carries
// buffered and streamed walks.
func TestTLSHandshakeRunsAside(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewTLSServer(alternatingAnswers(&calls))
	t.Cleanup(srv.Close)
	tg := tlsTarget(t, srv)
	var handshakeOn string
	tg.client().TLSConfig.VerifyConnection = func(tls.ConnectionState) error {
		handshakeOn = goroutineID()
		return nil
	}
	c, err := tg.client().Dial(tg.client().Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	tc, ok := c.(*tls.Conn)
	if !ok || !tc.ConnectionState().HandshakeComplete {
		t.Fatalf("Dial gave %T, handshake complete %v; want a handshaken *tls.Conn", c, ok && tc.ConnectionState().HandshakeComplete)
	}
	if trackedOf(c) == nil {
		t.Fatal("the TLS connection is not over a trackedConn")
	}
	if handshakeOn == "" || handshakeOn == goroutineID() {
		t.Fatalf("handshake ran on goroutine %q, the caller is %s", handshakeOn, goroutineID())
	}
	h := &harness{t: t, clk: realClock}
	for _, stream := range []bool{false, true, false, true} {
		rc, res := h.walk(chatCall(stream), []*Target{tg}, 5*time.Second, nil)
		if res.Status != 200 || res.Class != ClassOK {
			t.Fatalf("stream %v: status %d class %v", stream, res.Status, res.Class)
		}
		if stream && !strings.Contains(streamBody(t, rc), "[DONE]") {
			t.Fatal("stream over TLS without [DONE]")
		}
	}
}

// TestTLSHandshakeFailures: an untrusted certificate fails the dial (a
// transport failure, 502), and a server that never answers the handshake
// is cut at the client's WriteTimeout with fasthttp's
// ErrTLSHandshakeTimeout, as fasthttp's own handshake reports it.
func TestTLSHandshakeFailures(t *testing.T) {
	srv := httptest.NewTLSServer(http.NotFoundHandler())
	t.Cleanup(srv.Close)
	tg := tlsTarget(t, srv)
	tg.client().TLSConfig.RootCAs = x509.NewCertPool() // trusts nothing
	_, err := tg.client().Dial(tg.client().Addr)
	var ue *tls.CertificateVerificationError
	if !errors.As(err, &ue) || errClass(err) != ClassTransport {
		t.Fatalf("untrusted: %v, class %v; want a certificate error, ClassTransport", err, errClass(err))
	}

	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close() // silent until the test ends
		}
	}()
	tg2, err := NewPool().Target(&config.Target{
		VirtualKey: "b", Provider: config.ProviderOpenAI, BaseURL: "https://" + ln.Addr().String() + "/v1", APIKey: "sk-b",
		Timeout: 5 * time.Second, Retry: config.Retry{Attempts: 1},
		Concurrency: config.Concurrency{MaxConcurrency: 4, QueueSize: 4},
	})
	if err != nil {
		t.Fatal(err)
	}
	tg2.client().WriteTimeout = 50 * time.Millisecond
	if _, err := tg2.client().Dial(tg2.client().Addr); !errors.Is(err, fasthttp.ErrTLSHandshakeTimeout) {
		t.Fatalf("silent server: %v, want ErrTLSHandshakeTimeout", err)
	}
}

// alternatingAnswers answers the walks' calls in turn with a buffered
// chat completion and a one-event stream, counting them in calls.
func alternatingAnswers(calls *atomic.Int32) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1)%2 == 0 {
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = w.Write([]byte("data: {\"id\":\"c\",\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\ndata: [DONE]\n\n"))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"id":"a","object":"chat.completion","choices":[]}`))
	})
}

// insecureTLSTarget is a Target of the https server at baseURL that trusts
// its certificate unchecked and dials plain TCP into a tracked connection
// (fasthttp then handshakes), counting dials in dials when not nil.
func insecureTLSTarget(t *testing.T, baseURL, apiKey string, dials *atomic.Int32) *Target {
	t.Helper()
	tg, err := NewPool().Target(&config.Target{
		VirtualKey: "a", Provider: config.ProviderOpenAI, BaseURL: baseURL, APIKey: apiKey,
		Timeout: 5 * time.Second, Retry: config.Retry{Attempts: 1},
		Concurrency: config.Concurrency{MaxConcurrency: 4, QueueSize: 4},
	})
	if err != nil {
		t.Fatal(err)
	}
	tg.client().TLSConfig = &tls.Config{InsecureSkipVerify: true} //nolint:gosec // the test server's own certificate
	tg.client().Dial = func(addr string) (net.Conn, error) {
		if dials != nil {
			dials.Add(1)
		}
		c, err := net.Dial("tcp", addr)
		if err != nil {
			return nil, err
		}
		tc := newTrackedConn(c, &tg.state.conns)
		tc.tls = true
		return tc, nil
	}
	return tg
}

package upstream

import (
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/switchyard/switchyard/config"
)

// HostClient settings that do not come from the config.
const (
	// maxResponseBodySize caps a buffered (non-stream) upstream answer. An
	// image generation answer with b64_json can be tens of MB.
	maxResponseBodySize = 64 << 20
	// maxIdleConnDuration is the longest a pooled connection may have been
	// idle and still carry a request (trackedConn refuses an older one
	// before writing; fasthttp's cleaner closes it within about twice
	// that). It sits below the shortest idle timeout common LLM servers
	// use: uvicorn (vLLM, SGLang), Node's http server and llama.cpp's
	// server all close after 5 s, so a request never meets their close in
	// flight. Servers with shorter timeouts (gunicorn's 2 s) are covered by
	// the peek: their FIN has arrived long before our next write. The price
	// is a new connection (a TLS handshake to a cloud provider) after each
	// lull of 4 s or more.
	maxIdleConnDuration = 4 * time.Second
	// writeTimeout bounds writing one request to the socket; request bodies
	// are at most server.max_request_bytes, so this only trips on a stuck peer.
	writeTimeout = 30 * time.Second
	// dialTimeout bounds a TCP connect; the attempt deadline bounds it too.
	dialTimeout = 10 * time.Second
)

// Pool keeps the mutable per-target state — HostClient (with its keep-alive
// connections), Breaker, Park and Limiter — keyed by target identity:
// provider, base URL and a SHA-256 of the credentials. A reload that keeps
// a target's identity keeps its state (docs/routing.md, 9), whatever its name.
// Targets of one config that share an identity share that state (they are
// the same upstream deployment); their settings should agree, else the one
// built last wins. Safe for concurrent use.
type Pool struct {
	// Dial, when set before the first Target call, replaces the TCP dialer
	// (tests use in-memory listeners). nil = fasthttp's TCP dialer with
	// dialTimeout.
	Dial fasthttp.DialFunc

	mu     sync.Mutex
	states map[string]*targetState
}

// targetState is the state of one identity.
type targetState struct {
	id      string // provider + base URL + credential hash; no secret
	client  atomic.Pointer[fasthttp.HostClient]
	conns   connStats
	breaker Breaker
	park    Park
	limiter Limiter
	// tokens is the identity's OAuth token source; nil = none.
	tokens *TokenSource
	// transfer is the identity's client for the batch APIs (transfer.go),
	// built on first use by newTransfer.
	transfer    atomic.Pointer[fasthttp.HostClient]
	transferMu  sync.Mutex
	newTransfer func() *fasthttp.HostClient

	// Under Pool.mu: the settings the current client was built with.
	maxConns int
}

// NewPool returns an empty pool.
func NewPool() *Pool {
	return &Pool{states: map[string]*targetState{}}
}

// identity returns the state key of ct: provider, base URL and a hash of
// every credential field, so the key itself never holds a secret.
func identity(ct *config.Target) string {
	h := sha256.New()
	for _, s := range [...]string{ct.APIKey, ct.Region, ct.AWSAccessKeyID, ct.AWSSecretAccessKey, ct.AWSSessionToken,
		ct.AzureAPIVersion, ct.AzureTenantID, ct.AzureClientID, ct.AzureClientSecret, ct.AzureAuthority,
		ct.Project, string(ct.ServiceAccountKey)} {
		fmt.Fprintf(h, "%d:%s;", len(s), s) // length-prefixed: no ambiguity between fields
	}
	return ct.Provider + " " + strings.TrimRight(ct.BaseURL, "/") + " " + hex.EncodeToString(h.Sum(nil)[:16])
}

// Target builds the runtime Target for ct, creating or reusing the state of
// its identity. When the identity already has state, its breaker and
// limiter take ct's thresholds with counts kept (see Breaker.Update and
// Limiter.Resize) and the HostClient is kept unless max_concurrency changed
// (then a new client takes over; the old one's connections drain as its
// in-flight requests end). It returns an error for a provider without an
// adapter or an unusable base URL; config validation should have refused
// both, so the error only guards against a broken invariant.
func (p *Pool) Target(ct *config.Target) (*Target, error) {
	ad, err := adapterFor(ct.Provider)
	if err != nil {
		return nil, fmt.Errorf("target %q: %w", ct.VirtualKey, err)
	}
	base := strings.TrimRight(ct.BaseURL, "/")
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("target %q: base_url %q is not an http(s) URL", ct.VirtualKey, ct.BaseURL)
	}
	timeout := ct.Timeout
	if timeout <= 0 {
		timeout = 60 * time.Second
	}
	backoff := time.Duration(ct.Retry.InitialBackoffMs) * time.Millisecond
	if backoff <= 0 {
		backoff = 100 * time.Millisecond
	}
	t := &Target{
		Name:     ct.VirtualKey,
		Provider: ct.Provider,
		Endpoint: Endpoint{
			BaseURL:            base,
			APIKey:             ct.APIKey,
			Region:             ct.Region,
			AWSAccessKeyID:     ct.AWSAccessKeyID,
			AWSSecretAccessKey: ct.AWSSecretAccessKey,
			AWSSessionToken:    ct.AWSSessionToken,
			AnthropicBetas:     slices.Clone(ct.AnthropicBetas),
			APIVersion:         ct.AzureAPIVersion,
			Project:            ct.Project,
		},
		Adapter:  ad,
		ModelMap: cloneMap(ct.ModelMap),
		Timeout:  timeout,
		Retry: RetryPolicy{
			Attempts:       max(ct.Retry.Attempts, 1),
			OnStatusCodes:  append([]int(nil), ct.Retry.OnStatusCodes...),
			InitialBackoff: backoff,
		},
	}
	t.secrets = secretsOf(&t.Endpoint)
	t.Endpoint.Prepare(ad)
	bs := BreakerSettings{
		FailureThreshold: ct.CircuitBreaker.FailureThreshold,
		SuccessThreshold: ct.CircuitBreaker.SuccessThreshold,
		MaxHalfOpen:      ct.CircuitBreaker.MaxHalfThreshold,
		OpenTimeout:      ct.CircuitBreaker.Timeout,
	}
	maxConc := max(ct.Concurrency.MaxConcurrency, 1)

	id := identity(ct)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.states == nil {
		p.states = map[string]*targetState{}
	}
	st := p.states[id]
	if st == nil {
		st = &targetState{id: id}
		st.breaker.word.Store(1 << 2)
		st.tokens = newTokenSource(ct, t.secrets)
		st.newTransfer = func() *fasthttp.HostClient { return p.newTransferClient(u, &st.conns) }
		p.states[id] = st
	}
	t.Endpoint.Token = st.tokens
	st.breaker.Update(bs)
	st.limiter.Resize(maxConc, ct.Concurrency.QueueSize)
	if st.client.Load() == nil || st.maxConns != maxConc {
		st.client.Store(p.newHostClient(u, maxConc, &st.conns))
		st.maxConns = maxConc
	}
	t.state = st
	return t, nil
}

// Retain drops the state of every identity that no Target in ts uses (call
// it after a reload swapped in the Targets ts) and closes those clients'
// idle connections. Requests still running on dropped Targets finish
// normally: a Target keeps its state alive.
func (p *Pool) Retain(ts []*Target) {
	keep := make(map[*targetState]bool, len(ts))
	for _, t := range ts {
		keep[t.state] = true
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for id, st := range p.states {
		if !keep[st] {
			delete(p.states, id)
			st.client.Load().CloseIdleConnections()
			if tc := st.transfer.Load(); tc != nil {
				tc.CloseIdleConnections()
			}
			if st.tokens != nil {
				st.tokens.Stop()
			}
		}
	}
}

// Len returns the number of identities with state (tests and metrics).
func (p *Pool) Len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.states)
}

// newHostClient builds the HostClient of one identity. Every field is set
// on purpose.
func (p *Pool) newHostClient(u *url.URL, maxConns int, stats *connStats) *fasthttp.HostClient {
	isTLS := u.Scheme == "https"
	addr := u.Host
	if u.Port() == "" {
		if isTLS {
			addr += ":443"
		} else {
			addr += ":80"
		}
	}
	dial := p.Dial
	if dial == nil {
		// Dual stack: a local server may listen on [::1] only; fasthttp's
		// plain Dial is tcp4-only. Connected without growing the calling
		// goroutine's stack (see dialTCP).
		dial = func(a string) (net.Conn, error) { return dialTCP(a, dialTimeout) }
	}
	connect := func(a string) (net.Conn, error) {
		c, err := dial(a)
		if err != nil {
			return nil, err
		}
		tc := newTrackedConn(c, stats)
		tc.tls = isTLS
		return tc, nil
	}
	var hc *fasthttp.HostClient
	hc = &fasthttp.HostClient{
		Addr:  addr,
		IsTLS: isTLS,
		// TLS: verify the provider's certificate against its host name.
		// Sessions are resumed (one cache per HostClient, so per target:
		// nothing is shared between targets), which fasthttp's own
		// handshake did not do: a reconnect after a lull costs one round
		// trip less.
		TLSConfig: &tls.Config{ServerName: u.Hostname(), MinVersion: tls.VersionTLS12,
			ClientSessionCache: tls.NewLRUClientSessionCache(0)},
		// Dial wraps every connection so the walk can lift the attempt
		// deadline once a stream has committed, a reused connection is
		// checked before it carries a request, and a departed client's
		// call can be cut (see trackedConn). A TLS connection's handshake
		// runs off the calling goroutine too (see connectTLS).
		Dial: func(a string) (net.Conn, error) {
			if isTLS {
				return connectTLS(hc, func() (net.Conn, error) { return connect(a) })
			}
			return connect(a)
		},
		// A stale pooled connection is swapped for another before the
		// request is written (see connTransport).
		Transport: connTransport{},
		// Failover, retry and backoff live in one place, the walk; the
		// client must never re-send a request on its own (a POST to an LLM
		// is not idempotent and costs money).
		RetryIfErr:                func(*fasthttp.Request, int, error) (bool, bool) { return false, false },
		MaxIdemponentCallAttempts: 1,
		// The limiter admits at most max_concurrency attempts (streams hold
		// theirs until they end), so this many connections always suffice
		// and a request never waits in the client for a connection.
		MaxConns: maxConns,
		// Wait for a connection rather than fail with ErrNoFreeConns should
		// a closing connection still be counted; the attempt deadline bounds it.
		MaxConnWaitTimeout:  dialTimeout,
		MaxIdleConnDuration: maxIdleConnDuration,
		// Bodies go out byte for byte and paths as the adapter built them
		// (Bedrock model ids contain ':' and escaped '/').
		DisablePathNormalizing: true,
		// Provider error bodies and headers are read as sent; header names
		// are compared case-insensitively by fasthttp's Peek anyway.
		DisableHeaderNamesNormalizing: false,
		// Buffered answers are capped; streamed answers are not (they are
		// relayed event by event, never held whole).
		MaxResponseBodySize: maxResponseBodySize,
		// Streaming is chosen per response (Response.StreamBody = true for a
		// stream call) rather than for the whole client, so non-stream
		// answers stay buffered and subject to MaxResponseBodySize.
		StreamResponseBody: false,
		// ReadTimeout is an absolute deadline set once per response in
		// fasthttp, which would cut long streams; the walk passes a
		// per-attempt deadline (DoDeadline) and, for a committed stream, an
		// idle deadline per event instead.
		ReadTimeout:  0,
		WriteTimeout: writeTimeout,
		// An open stream holds this reader for its whole life, so it is
		// fasthttp's default; a head that does not fit is read again
		// through a larger reader, up to maxResponseHead (see readAnswer).
		ReadBufferSize: answerBufferSize,
		// Upstreams see no fasthttp User-Agent; adapters set their own
		// headers.
		NoDefaultUserAgentHeader: true,
	}
	return hc
}

func cloneMap(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	c := make(map[string]string, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

// adapterFor returns the adapter of a provider.
func adapterFor(provider string) (Adapter, error) {
	if a := adapters[provider]; a != nil {
		return a, nil
	}
	return nil, fmt.Errorf("provider %q not built", provider)
}

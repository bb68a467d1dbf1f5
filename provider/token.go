package provider

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"
	"golang.org/x/oauth2/google"
)

// Token fetch settings.
const (
	// tokenFetchTimeout bounds one token request; it is also the longest
	// the first request after start waits for the first token.
	tokenFetchTimeout = 10 * time.Second
	// maxRefreshMargin is how long before expiry a token is replaced at
	// most; a short-lived token is replaced when a quarter of its life is
	// left.
	maxRefreshMargin = 5 * time.Minute
	// tokenRetryMax caps the backoff between failed fetches.
	tokenRetryMax = 30 * time.Second
	// untimedTokenLife is when a token without an expiry is replaced.
	untimedTokenLife = 30 * time.Minute
)

// Scopes requested for the providers' tokens.
const (
	azureScope  = "https://cognitiveservices.azure.com/.default"
	googleScope = "https://www.googleapis.com/auth/cloud-platform"
)

// ErrNoToken is a target's token source without a usable token: the
// first fetch failed or the last token expired before a refresh
// succeeded. The walk treats it as a transport failure of that target.
var ErrNoToken = errors.New("upstream: no access token for this target (token fetch failed)")

// TokenSource keeps one identity's OAuth 2.0 access token fresh: a
// goroutine fetches it at start and again before it expires, so requests
// only read it. Safe for concurrent use.
type TokenSource struct {
	fetch func(ctx context.Context) (*oauth2.Token, error)
	// static holds the identity's other credentials to redact.
	static []Secret

	cur     atomic.Pointer[bearer]
	secrets atomic.Pointer[[]Secret] // static + the current and previous tokens
	first   chan struct{}            // closed when the first fetch ended
	stop    chan struct{}
	once    sync.Once
	fails   atomic.Int64
}

// bearer is one fetched token as sent: "Bearer <token>".
type bearer struct {
	header []byte
	expiry time.Time // zero = none stated
}

// Credentials are the parts of a target's config a token source reads.
type Credentials struct {
	// Provider is the target's provider.
	Provider string
	// AzureClientID, AzureClientSecret, AzureAuthority and AzureTenantID
	// are azure's Entra ID client credentials ("" client id = none).
	AzureClientID, AzureClientSecret, AzureAuthority, AzureTenantID string
	// ServiceAccountKey is vertex's service account key JSON (nil = none).
	ServiceAccountKey []byte
}

// NewTokenSource returns the token source of ct's credentials, started,
// or nil when ct has none (an API key or no credential). static are the
// identity's other credentials, redacted along with its tokens.
func NewTokenSource(ct Credentials, static []Secret) *TokenSource {
	var fetch func(ctx context.Context) (*oauth2.Token, error)
	switch {
	case ct.Provider == Azure && ct.AzureClientID != "":
		cc := &clientcredentials.Config{
			ClientID:     ct.AzureClientID,
			ClientSecret: ct.AzureClientSecret,
			TokenURL:     ct.AzureAuthority + "/" + ct.AzureTenantID + "/oauth2/v2.0/token",
			Scopes:       []string{azureScope},
			AuthStyle:    oauth2.AuthStyleInParams,
		}
		fetch = cc.Token
	case ct.Provider == Vertex && len(ct.ServiceAccountKey) > 0:
		jc, err := google.JWTConfigFromJSON(ct.ServiceAccountKey, googleScope)
		if err != nil {
			// Validated at load; a key that fails here fails every fetch.
			fetch = func(context.Context) (*oauth2.Token, error) { return nil, err }
			break
		}
		// A fresh source per fetch: the library's source reuses a token
		// until 10 s before its expiry, which would defeat the refresh.
		fetch = func(ctx context.Context) (*oauth2.Token, error) { return jc.TokenSource(ctx).Token() }
	default:
		return nil
	}
	ts := &TokenSource{fetch: fetch, static: static, first: make(chan struct{}), stop: make(chan struct{})}
	ts.secrets.Store(&static)
	go ts.run()
	return ts
}

// Authorization returns the current "Bearer <token>" value, waiting for
// the first fetch if none has ended yet, or ErrNoToken. The bytes must not
// be modified.
func (ts *TokenSource) Authorization(now time.Time) ([]byte, error) {
	b := ts.cur.Load()
	if b == nil {
		select {
		case <-ts.first:
		case <-time.After(tokenFetchTimeout):
		}
		b = ts.cur.Load()
	}
	if b == nil || !b.expiry.IsZero() && !now.Before(b.expiry) {
		return nil, ErrNoToken
	}
	return b.header, nil
}

// Fails returns how many token fetches have failed.
func (ts *TokenSource) Fails() int64 { return ts.fails.Load() }

// Secrets returns the credentials to redact now: the static ones and the
// current and previous access tokens. The caller must not modify them.
func (ts *TokenSource) Secrets() []Secret { return *ts.secrets.Load() }

// Stop ends the refresh goroutine; the last token stays readable.
func (ts *TokenSource) Stop() { ts.once.Do(func() { close(ts.stop) }) }

// run fetches a token, then replaces it before it expires, until Stop.
func (ts *TokenSource) run() {
	client := &http.Client{Timeout: tokenFetchTimeout}
	backoff := time.Second
	firstDone := false
	for {
		ctx, cancel := context.WithTimeout(context.WithValue(context.Background(), oauth2.HTTPClient, client), tokenFetchTimeout)
		tok, err := ts.fetch(ctx)
		cancel()
		var wait time.Duration
		if err != nil || tok == nil || tok.AccessToken == "" {
			ts.fails.Add(1)
			wait = backoff
			backoff = min(backoff*2, tokenRetryMax)
			if b := ts.cur.Load(); b != nil && !b.expiry.IsZero() {
				// Retry sooner rather than let a still-valid token lapse.
				wait = min(wait, max(time.Until(b.expiry)/2, 100*time.Millisecond))
			}
		} else {
			backoff = time.Second
			ts.publish(tok)
			wait = untimedTokenLife
			if !tok.Expiry.IsZero() {
				life := time.Until(tok.Expiry)
				wait = life - min(life/4, maxRefreshMargin)
			}
		}
		if !firstDone {
			firstDone = true
			close(ts.first)
		}
		select {
		case <-ts.stop:
			return
		case <-time.After(max(wait, 50*time.Millisecond)):
		}
	}
}

// publish makes tok current and redacts it (and the one it replaces, which
// answers in flight may still echo) from everything sent to a client.
func (ts *TokenSource) publish(tok *oauth2.Token) {
	b := &bearer{header: []byte("Bearer " + tok.AccessToken), expiry: tok.Expiry}
	prev := ts.cur.Swap(b)
	ss := append([]Secret(nil), ts.static...)
	ss = appendSecret(ss, tok.AccessToken)
	if prev != nil {
		ss = appendSecret(ss, string(prev.header[len("Bearer "):]))
	}
	ts.secrets.Store(&ss)
}

// Package admin is the operator's console (docs/console.md): a fasthttp
// server of its own, on admin.listen and never on the API port, serving an
// embedded web page and the JSON API behind it — GET /api/status,
// GET /api/history, GET /api/decisions (a long poll with after=SEQ) and
// GET /api/explain. Nothing it answers holds a credential, a client key or
// a request body: targets are shown by name, provider and label; keys by
// name; decisions carry no header or body.
package admin

import (
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"github.com/valyala/fasthttp"

	"github.com/switchyard/switchyard/cli"
	"github.com/switchyard/switchyard/config"
	"github.com/switchyard/switchyard/hotpath"
)

// Options configure a Server.
type Options struct {
	// Gateway is the gateway whose State the console shows.
	Gateway *hotpath.Gateway
	// Recorder is fed by the Gateway's Finished hook.
	Recorder *Recorder
	// Reloads is the daemon's reload history.
	Reloads *History
	// Admin is the admin block the console was started with (listen and
	// key are restart-only).
	Admin config.Admin
	// Version is the gateway's version.
	Version string
	// Quotas, when set, supplies quota use and spend; nil shows null.
	Quotas Quotas
	// Log receives the server's own errors.
	Log zerolog.Logger
}

// Server is the console's HTTP server. Create it with New.
type Server struct {
	opts    Options
	srv     *fasthttp.Server
	started time.Time
	// loopback is true when the listener binds loopback only; without a key
	// the console then answers only Host names that are loopback (DNS
	// rebinding: a web page must not read it through a name it controls).
	loopback bool
	// pause is how a long poll waits between looks at the ring: sleep (a
	// test sees when an answer would wait).
	pause func(time.Duration)
	// closing is closed by Shutdown, ending long polls.
	closing   chan struct{}
	closeOnce sync.Once
}

// MaxDecisions is how many decisions one /api/decisions answer holds at
// most: the console's list length.
const MaxDecisions = 200

// Long-poll bounds of /api/decisions: how long it waits by default and at
// most, and how often it looks at the ring meanwhile.
const (
	defaultWait = 25 * time.Second
	maxWait     = 55 * time.Second
	pollEvery   = 50 * time.Millisecond
)

// New returns the console server.
func New(opts Options) *Server {
	s := &Server{opts: opts, started: time.Now(), closing: make(chan struct{})}
	s.pause = s.sleep
	if host, _, err := net.SplitHostPort(opts.Admin.Listen); err == nil {
		s.loopback = config.LoopbackHost(host)
	}
	s.srv = &fasthttp.Server{
		Handler: s.handle,
		Name:    "switchyard-admin",
		// Its own small pool: a busy console cannot take workers, memory
		// or connections from the API server, which is another Server.
		Concurrency:        256,
		ReadTimeout:        10 * time.Second,
		WriteTimeout:       maxWait + 10*time.Second,
		IdleTimeout:        2 * time.Minute,
		MaxRequestBodySize: 4 << 10,
		ReadBufferSize:     8 << 10,
		NoDefaultDate:      true,
		Logger:             fasthttpLog{opts.Log},
	}
	return s
}

// Serve serves ln until Shutdown.
func (s *Server) Serve(ln net.Listener) error { return s.srv.Serve(ln) }

// Shutdown closes the listener and waits for requests in progress; a long
// poll answers at once with what it has.
func (s *Server) Shutdown() error {
	s.closeOnce.Do(func() { close(s.closing) })
	return s.srv.Shutdown()
}

// sleep waits d, or less when the server shuts down.
func (s *Server) sleep(d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-s.closing:
	}
}

// shuttingDown reports whether Shutdown was called.
func (s *Server) shuttingDown() bool {
	select {
	case <-s.closing:
		return true
	default:
		return false
	}
}

type fasthttpLog struct{ l zerolog.Logger }

func (f fasthttpLog) Printf(format string, args ...any) { f.l.Warn().Msgf(format, args...) }

// handle routes one console request.
func (s *Server) handle(rc *fasthttp.RequestCtx) {
	h := &rc.Response.Header
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	if !rc.IsGet() && !rc.IsHead() {
		h.Set("Allow", "GET, HEAD")
		s.jsonError(rc, fasthttp.StatusMethodNotAllowed, "the console answers GET only")
		return
	}
	if !s.authorized(rc) {
		h.Set("WWW-Authenticate", `Basic realm="switchyard console", charset="UTF-8"`)
		s.jsonError(rc, fasthttp.StatusUnauthorized, "this console needs the admin key: Authorization: Bearer <admin.key>")
		return
	}
	if !s.opts.Admin.HasKey && s.loopback && !loopbackHostHeader(rc.Host()) {
		s.jsonError(rc, fasthttp.StatusForbidden, "the console without a key answers only loopback host names (localhost, 127.0.0.1, [::1])")
		return
	}
	path := string(rc.Path())
	switch path {
	case "/api/status":
		st := s.opts.Gateway.Load()
		if st == nil {
			s.jsonError(rc, fasthttp.StatusServiceUnavailable, "no configuration loaded")
			return
		}
		s.writeJSON(rc, s.status(st, time.Now()))
	case "/api/history":
		st := s.opts.Gateway.Load()
		if st == nil {
			s.jsonError(rc, fasthttp.StatusServiceUnavailable, "no configuration loaded")
			return
		}
		s.history(rc, st.Config, time.Now())
	case "/api/decisions":
		s.decisions(rc)
	case "/api/explain":
		s.explain(rc)
	default:
		s.asset(rc, path)
	}
}

// authorized checks the admin key: "Authorization: Bearer <key>", or HTTP
// Basic with the key as the password (so a browser can ask for it).
// Without a key every request is authorized.
func (s *Server) authorized(rc *fasthttp.RequestCtx) bool {
	if !s.opts.Admin.HasKey {
		return true
	}
	auth := rc.Request.Header.Peek(fasthttp.HeaderAuthorization)
	var presented []byte
	switch {
	case len(auth) > 7 && strings.EqualFold(string(auth[:7]), "bearer "):
		presented = bytes.TrimSpace(auth[7:])
	case len(auth) > 6 && strings.EqualFold(string(auth[:6]), "basic "):
		raw, err := base64.StdEncoding.DecodeString(string(bytes.TrimSpace(auth[6:])))
		if err != nil {
			return false
		}
		_, pass, ok := bytes.Cut(raw, []byte(":"))
		if !ok {
			return false
		}
		presented = pass
	default:
		return false
	}
	sum := sha256.Sum256(presented)
	return subtle.ConstantTimeCompare(sum[:], s.opts.Admin.KeyDigest[:]) == 1
}

// loopbackHostHeader reports whether a Host header names loopback.
func loopbackHostHeader(host []byte) bool {
	h := string(host)
	if hh, _, err := net.SplitHostPort(h); err == nil {
		h = hh
	}
	return config.LoopbackHost(h)
}

// explain answers GET /api/explain with what `switchyard explain -json`
// prints for the same request under the configuration served: the report
// as data, with its text and lines.
func (s *Server) explain(rc *fasthttp.RequestCtx) {
	st := s.opts.Gateway.Load()
	if st == nil {
		s.jsonError(rc, fasthttp.StatusServiceUnavailable, "no configuration loaded")
		return
	}
	args := rc.QueryArgs()
	q := cli.ExplainRequest{
		Model:    string(args.Peek("model")),
		User:     string(args.Peek("user")),
		HasUser:  args.Has("user"),
		Metadata: string(args.Peek("metadata")),
		Surface:  string(args.Peek("surface")),
		Key:      string(args.Peek("key")),
	}
	var err error
	if q.Stream, q.StreamSet, err = boolArg(args, "stream"); err != nil {
		s.jsonError(rc, fasthttp.StatusBadRequest, err.Error())
		return
	}
	if q.Tools, q.ToolsSet, err = boolArg(args, "tools"); err != nil {
		s.jsonError(rc, fasthttp.StatusBadRequest, err.Error())
		return
	}
	if q.Model == "" {
		s.jsonError(rc, fasthttp.StatusBadRequest, "model is required")
		return
	}
	e, err := cli.ExplainData(st.Config, q)
	if err != nil {
		s.jsonError(rc, fasthttp.StatusBadRequest, err.Error())
		return
	}
	s.writeJSON(rc, e)
}

// boolArg reads a boolean query parameter: true, false, 1, 0 or empty
// (true, as a bare flag).
func boolArg(args *fasthttp.Args, name string) (v, set bool, err error) {
	if !args.Has(name) {
		return false, false, nil
	}
	switch string(args.Peek(name)) {
	case "", "true", "1", "on":
		return true, true, nil
	case "false", "0", "off":
		return false, true, nil
	}
	return false, false, &paramError{name + ": want true or false"}
}

type paramError struct{ msg string }

func (e *paramError) Error() string { return e.msg }

func (s *Server) writeJSON(rc *fasthttp.RequestCtx, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		s.opts.Log.Error().Err(err).Msg("admin: cannot encode an answer")
		s.jsonError(rc, fasthttp.StatusInternalServerError, "cannot encode the answer")
		return
	}
	rc.SetContentType("application/json")
	rc.SetBody(b)
}

func (s *Server) jsonError(rc *fasthttp.RequestCtx, status int, msg string) {
	b, _ := json.Marshal(struct {
		Error string `json:"error"`
	}{msg})
	rc.SetStatusCode(status)
	rc.SetContentType("application/json")
	rc.SetBody(b)
}

package batch_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"mime/multipart"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttputil"

	"github.com/switchyard/switchyard/batch"
	"github.com/switchyard/switchyard/config"
	"github.com/switchyard/switchyard/hotpath"
	"github.com/switchyard/switchyard/mock"
	"github.com/switchyard/switchyard/quota"
	"github.com/switchyard/switchyard/tenancy"
	"github.com/switchyard/switchyard/upstream"
)

// testGateway is a Gateway with a batch Server on an in-memory listener.
type testGateway struct {
	g      *hotpath.Gateway
	s      *batch.Server
	client *fasthttp.Client
	// dial opens a raw connection to the gateway.
	dial   func() (net.Conn, error)
	mu     sync.Mutex
	fenced []string
}

// newTestGateway serves the configuration yaml (%s: the mocks' URLs, in
// order), loaded without the residency proof when unproven.
func newTestGateway(t *testing.T, yaml string, unproven bool, store tenancy.ObjectStore) *testGateway {
	t.Helper()
	path := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	var cfg *config.Config
	var err error
	if unproven {
		cfg, err = config.LoadUnproven(path)
	} else {
		cfg, err = config.Load(path)
	}
	if err != nil {
		t.Fatal(err)
	}
	st, err := hotpath.Build(cfg, upstream.NewPool(), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	st.Quota = quota.New(context.Background(), cfg, nil, zerolog.Nop()).Plan(cfg)
	tg := &testGateway{g: hotpath.New(st)}
	tg.s = &batch.Server{Gateway: tg.g, Store: store}
	tg.g.Batches = tg.s
	tg.g.Objects = store
	tg.g.Fenced = func(key, target string) {
		tg.mu.Lock()
		tg.fenced = append(tg.fenced, key+"->"+target)
		tg.mu.Unlock()
	}
	ln := fasthttputil.NewInmemoryListener()
	srv := hotpath.NewServer(tg.g, nil, false)
	go srv.Serve(ln) //nolint:errcheck
	t.Cleanup(func() { srv.Shutdown(); ln.Close() })
	tg.dial = ln.Dial
	tg.client = &fasthttp.Client{Dial: func(string) (net.Conn, error) { return ln.Dial() }}
	return tg
}

func (tg *testGateway) do(t *testing.T, method, path, key, ct string, body []byte, hdr ...string) (int, string, *fasthttp.ResponseHeader) {
	t.Helper()
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	req.Header.SetMethod(method)
	req.SetRequestURI("http://gw.local" + path)
	req.Header.Set("Authorization", "Bearer "+key)
	if ct != "" {
		req.Header.SetContentType(ct)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	req.SetBody(body)
	if err := tg.client.DoTimeout(req, resp, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	h := &fasthttp.ResponseHeader{}
	resp.Header.CopyTo(h)
	return resp.StatusCode(), string(resp.Body()), h
}

const fenceYAML = `
strategy:
  mode: conditional
  conditions:
    - {key: model, value: eu-model, target_key: eu}
    - {key: model, value: us-model, target_key: us}
targets:
  - {virtual_key: eu, provider: openai, base_url: %q, residency: eu}
  - {virtual_key: us, provider: openai, base_url: %q, residency: us}
auth:
  keys:
    - {name: eu-tenant, key: sy-eu-tenant-0123456789abcdef, residency: [eu]}
`

// TestResidencyFenceOnBatchCalls: with a configuration the load-time
// proof would refuse (loaded unproven), the run-time guard still keeps an
// EU key's upload and an id recorded on a US target from reaching it:
// 500 internal_error, the Fenced hook told, no upstream call.
func TestResidencyFenceOnBatchCalls(t *testing.T) {
	eu, err := mock.Start("127.0.0.1:0", mock.Options{Name: "eu"})
	if err != nil {
		t.Fatal(err)
	}
	defer eu.Close()
	us, err := mock.Start("127.0.0.1:0", mock.Options{Name: "us"})
	if err != nil {
		t.Fatal(err)
	}
	defer us.Close()
	store := tenancy.NewMemoryObjects(0, nil)
	tg := newTestGateway(t, fmt.Sprintf(fenceYAML, eu.BaseURL(), us.BaseURL()), true, store)
	if err := store.Put(context.Background(), tenancy.Object{Kind: tenancy.KindFile, ID: "file-us-1", Key: "eu-tenant",
		Target: "us", Purpose: "batch"}, time.Hour); err != nil {
		t.Fatal(err)
	}
	status, body, _ := tg.do(t, "GET", "/v1/files/file-us-1", "sy-eu-tenant-0123456789abcdef", "", nil)
	if status != 500 || !strings.Contains(body, "internal_error") {
		t.Fatalf("read of an id on a fenced target = %d %s; want 500 internal_error", status, body)
	}
	var b bytes.Buffer
	w := multipart.NewWriter(&b)
	w.WriteField("purpose", "batch")
	fw, _ := w.CreateFormFile("file", "x.jsonl")
	io.WriteString(fw, `{"custom_id":"1","method":"POST","url":"/v1/chat/completions","body":{"model":"us-model","messages":[]}}`+"\n")
	w.Close()
	status, body, _ = tg.do(t, "POST", "/v1/files", "sy-eu-tenant-0123456789abcdef", w.FormDataContentType(), b.Bytes())
	if status != 500 {
		t.Fatalf("upload routed to a fenced target = %d %s; want 500", status, body)
	}
	if n := us.BatchStats().Calls() + eu.BatchStats().Calls(); n != 0 {
		t.Fatalf("%d upstream calls; want none", n)
	}
	tg.mu.Lock()
	defer tg.mu.Unlock()
	if strings.Join(tg.fenced, ",") != "eu-tenant->us,eu-tenant->us" {
		t.Fatalf("fenced = %v", tg.fenced)
	}
}

const urlYAML = `
server: {public_url: %q}
strategy:
  mode: conditional
  conditions:
    - {key: model_prefix, value: claude-, target_key: claude}
targets:
  - {virtual_key: claude, provider: anthropic, base_url: %q}
`

// TestResultsURL: a message batch's results_url is the gateway's own:
// server.public_url, else the connection's scheme and the Host; a client's
// X-Forwarded-Proto is not taken for the scheme.
func TestResultsURL(t *testing.T) {
	claude, err := mock.Start("127.0.0.1:0", mock.Options{Name: "claude"})
	if err != nil {
		t.Fatal(err)
	}
	defer claude.Close()
	body := []byte(`{"requests":[{"custom_id":"a","params":{"model":"claude-x","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}}]}`)
	for _, c := range []struct{ public, want string }{
		{"https://llm.example.com/", "https://llm.example.com/v1/messages/batches/%s/results"},
		{"", "http://gw.local/v1/messages/batches/%s/results"}, // the request's Host, and not X-Forwarded-Proto
	} {
		tg := newTestGateway(t, fmt.Sprintf(urlYAML, c.public, "http://"+claude.Addr()), false, tenancy.NewMemoryObjects(0, nil))
		status, answer, _ := tg.do(t, "POST", "/v1/messages/batches", "", "application/json", body, "X-Forwarded-Proto", "https")
		id := between(answer, `"id":"`, `"`)
		if status != 200 || id == "" {
			t.Fatalf("create = %d %s", status, answer)
		}
		status, answer, _ = tg.do(t, "GET", "/v1/messages/batches/"+id, "", "", nil, "X-Forwarded-Proto", "https")
		if want := fmt.Sprintf(c.want, id); status != 200 || between(answer, `"results_url":"`, `"`) != want {
			t.Fatalf("public_url %q: %d %s; want results_url %s", c.public, status, answer, want)
		}
	}
}

func between(s, a, b string) string {
	i := strings.Index(s, a)
	if i < 0 {
		return ""
	}
	s = s[i+len(a):]
	if j := strings.Index(s, b); j >= 0 {
		return s[:j]
	}
	return ""
}

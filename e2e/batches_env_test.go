package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/switchyard/switchyard/daemon"
	"github.com/switchyard/switchyard/mock"
)

// The batch APIs' world (docs/batches.md): two OpenAI mocks in one chain
// for gpt-4o, an Anthropic mock, an Azure OpenAI mock (v1 API) holding the
// EU tenant's data-zone deployment, and a US OpenAI mock; five client keys.
//
//	acme    any model
//	globex  any model (the other tenant)
//	bound   bound to user acme-user
//	eu      bound to user eu-tenant, residency [eu], may use eu-model only: pinned to azure-eu
//	tight   may use gpt-4o-mini only
const (
	batchAcmeKey   = "sy-batch-acme-0123456789abcdef0123456789"
	batchGlobexKey = "sy-batch-globex-0123456789abcdef01234567"
	batchBoundKey  = "sy-batch-bound-0123456789abcdef012345678"
	batchEUKey     = "sy-batch-eu-0123456789abcdef0123456789ab"
	batchTightKey  = "sy-batch-tight-0123456789abcdef012345678"
)

const batchYAML = `
server:
  spool_dir: %s
%s
strategy:
  mode: conditional
  conditions:
    - {key: user, value: vip, target_key: oai2}
    - {key: model, value: gpt-4o, target_keys: [oai, oai2]}
    - {key: model, value: gpt-4o-mini, target_key: oai}
    - {key: model, value: text-embedding-3-small, target_key: oai2}
    - {key: model_prefix, value: claude-, target_keys: [claude, oai]}
    - {key: model, value: eu-model, target_key: azure-eu}
    - {key: model, value: us-only, target_key: us}
targets:
  - {virtual_key: oai, provider: openai, base_url: %q, api_key: sk-oai-secret-0001, models: [gpt-4o, gpt-4o-mini]}
  - {virtual_key: oai2, provider: openai, base_url: %q, api_key: sk-oai2-secret-0002}
  - virtual_key: claude
    provider: anthropic
    base_url: %q
    api_key: sk-ant-secret-00003
    prices:
      "claude-*": {input: 3, output: 15}
  - virtual_key: azure-eu
    provider: azure
    base_url: %q
    api_key: az-secret-key-00004
    azure_deployment_type: datazone
    residency: eu
    model_map: {eu-model: eu-gpt4o-datazone}
    prices:
      eu-model: {input: 2.5, output: 10}
  - {virtual_key: us, provider: openai, base_url: %q, api_key: sk-us-secret-00005, residency: us}
auth:
  keys:
    - name: acme
      key: ` + batchAcmeKey + `
%s
    - {name: globex, key: ` + batchGlobexKey + `}
    - {name: bound, key: ` + batchBoundKey + `, user: acme-user}
    - name: eu
      key: ` + batchEUKey + `
      user: eu-tenant
      residency: [eu]
      models: [eu-model]
%s
    - {name: tight, key: ` + batchTightKey + `, models: [gpt-4o-mini]}
%s
`

// batchEnv is a gateway with the batch mocks.
type batchEnv struct {
	oai, oai2, claude, us *mock.Server
	azure                 *mock.Cloud
	base                  string
	spool                 string
	d                     *daemon.Daemon
	http                  *http.Client
	logs                  *syncBuffer
}

// batchOptions change the batch world for one test.
type batchOptions struct {
	server    string // more server keys, indented 2
	acmeExtra string // more of acme's keys, indented 6
	euExtra   string // more of eu's keys, indented 6
	extra     string // YAML appended (quotas, audit)
}

func newBatchEnv(t *testing.T, o batchOptions) *batchEnv { return newBatchEnvOn(t, o, nil) }

// newBatchEnvOn starts a gateway on the mocks of like (nil: new ones).
func newBatchEnvOn(t *testing.T, o batchOptions, like *batchEnv) *batchEnv {
	t.Helper()
	e := &batchEnv{logs: &syncBuffer{}, spool: t.TempDir()}
	if like != nil {
		e.oai, e.oai2, e.claude, e.us, e.azure = like.oai, like.oai2, like.claude, like.us, like.azure
	} else {
		e.startMocks(t)
	}
	e.startGateway(t, o)
	return e
}

func (e *batchEnv) startMocks(t *testing.T) {
	start := func(name string) *mock.Server {
		m, err := mock.Start("127.0.0.1:0", mock.Options{Name: name})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { m.Close() })
		return m
	}
	e.oai, e.oai2, e.claude, e.us = start("oai"), start("oai2"), start("claude"), start("us")
	az, err := mock.StartCloud("127.0.0.1:0", mock.CloudOptions{Name: "azure", AzureKey: "az-secret-key-00004"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { az.Close() })
	e.azure = az
}

func (e *batchEnv) startGateway(t *testing.T, o batchOptions) {
	cfg := fmt.Sprintf(batchYAML, e.spool, o.server, e.oai.BaseURL(), e.oai2.BaseURL(), "http://"+e.claude.Addr(),
		e.azure.URL()+"/openai/v1", e.us.BaseURL(), o.acmeExtra, o.euExtra, o.extra)
	path := filepath.Join(t.TempDir(), "switchyard.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	d, err := daemon.New(path, "127.0.0.1:0", e.logs)
	if err != nil {
		t.Fatalf("daemon.New: %v\nlogs:\n%s", err, e.logs)
	}
	ln, err := d.Listen()
	if err != nil {
		t.Fatal(err)
	}
	e.d = d
	served := make(chan error, 1)
	go func() { served <- d.Serve(ln) }()
	e.base = "http://" + d.Addr().String()
	tr := &http.Transport{MaxIdleConnsPerHost: 8}
	e.http = &http.Client{Timeout: 30 * time.Second, Transport: tr}
	t.Cleanup(func() {
		tr.CloseIdleConnections()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := d.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
		<-served
	})
}

// openai returns an OpenAI SDK client presenting key.
func (e *batchEnv) openai(key string) openai.Client {
	return openai.NewClient(option.WithBaseURL(e.base+"/v1/"), option.WithAPIKey(key), option.WithMaxRetries(0),
		option.WithHTTPClient(e.http))
}

// anthropic returns an Anthropic SDK client presenting key.
func (e *batchEnv) anthropic(key string) anthropic.Client {
	return anthropic.NewClient(aoption.WithBaseURL(e.base), aoption.WithAPIKey(key), aoption.WithMaxRetries(0),
		aoption.WithHTTPClient(e.http))
}

// batchCalls is every batch API call the mocks received.
func (e *batchEnv) batchCalls() int64 {
	return e.oai.BatchStats().Calls() + e.oai2.BatchStats().Calls() + e.claude.BatchStats().Calls() +
		e.us.BatchStats().Calls() + e.azure.Inner().BatchStats().Calls()
}

// spoolFiles lists the spool directory.
func (e *batchEnv) spoolFiles(t *testing.T) []string {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(e.spool, "*"))
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// do sends a request with key and returns the status, headers and body.
func (e *batchEnv) do(t *testing.T, method, path, key, contentType string, body io.Reader) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(method, e.base+path, body)
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := e.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

// upload sends a batch file of lines with purpose and key, as the SDKs do.
func (e *batchEnv) upload(t *testing.T, key, purpose string, lines ...string) (int, http.Header, string) {
	t.Helper()
	body, ct := multipartFile(t, purpose, strings.Join(lines, "\n")+"\n")
	return e.do(t, "POST", "/v1/files", key, ct, bytes.NewReader(body))
}

// multipartFile is an upload's body and content type.
func multipartFile(t *testing.T, purpose, content string) ([]byte, string) {
	t.Helper()
	var b bytes.Buffer
	w := multipart.NewWriter(&b)
	fw, err := w.CreateFormFile("file", "batch.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(fw, content)
	if purpose != "" {
		w.WriteField("purpose", purpose)
	}
	w.Close()
	return b.Bytes(), w.FormDataContentType()
}

// chatLine is one batch line asking model for a chat completion.
func chatLine(id, model string, extra ...string) string {
	body := `{"model":"` + model + `","messages":[{"role":"user","content":"hi"}]` + strings.Join(extra, "") + `}`
	return `{"custom_id":"` + id + `","method":"POST","url":"/v1/chat/completions","body":` + body + `}`
}

// mockFailure fails the next count API calls of a mock with status.
func mockFailure(status, count int) mock.Failure { return mock.Failure{Status: status, Count: count} }

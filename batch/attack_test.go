package batch_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"mime/multipart"
	"strings"
	"testing"

	"github.com/switchyard/switchyard/mock"
	"github.com/switchyard/switchyard/tenancy"
)

// Attacks on the batch APIs by one tenant against another's stored state.

const (
	aliceKey = "sy-alice-0123456789abcdef0123"
	bobKey   = "sy-bob-0123456789abcdef012345"
)

const twoKeysYAML = `
strategy:
  mode: conditional
  conditions:
    - {key: model_prefix, value: gpt-, target_key: oai}
targets:
  - {virtual_key: oai, provider: openai, base_url: %q, api_key: sk-oai-upstream-secret-0001}
auth:
  keys:
    - {name: alice, key: ` + aliceKey + `}
    - {name: bob, key: ` + bobKey + `}
`

// twoKeys starts an OpenAI mock and a gateway in front of it with the
// client keys alice and bob.
func twoKeys(t *testing.T) (*testGateway, *mock.Server) {
	t.Helper()
	m, err := mock.Start("127.0.0.1:0", mock.Options{Name: "oai"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return newTestGateway(t, fmt.Sprintf(twoKeysYAML, m.BaseURL()), false, tenancy.NewMemoryObjects(0, nil)), m
}

// form is a batch file upload of content, as the SDKs send it.
func form(t *testing.T, content string) ([]byte, string) {
	t.Helper()
	var b bytes.Buffer
	w := multipart.NewWriter(&b)
	fw, err := w.CreateFormFile("file", "batch.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(fw, content)
	w.WriteField("purpose", "batch")
	w.Close()
	return b.Bytes(), w.FormDataContentType()
}

// TestBatchLineContinuesAnotherKeysResponse: a Responses line naming, as
// previous_response_id, a response another key created is refused as the
// same request alone is (404 response_not_found, naming the line), in
// any spelling the provider would read as that id; nothing is uploaded.
// The provider runs a stored batch with the gateway's one credential, so
// a line that got through would continue the other tenant's conversation.
func TestBatchLineContinuesAnotherKeysResponse(t *testing.T) {
	tg, m := twoKeys(t)
	owners := tenancy.NewMemory(0, nil)
	tg.g.Owners = owners
	ctx := context.Background()
	if err := owners.Remember(ctx, "resp_alice_1", "alice", tenancy.TTL); err != nil {
		t.Fatal(err)
	}
	if err := owners.Remember(ctx, "resp_bob_1", "bob", tenancy.TTL); err != nil {
		t.Fatal(err)
	}
	line := func(member string) string {
		return `{"custom_id":"c","method":"POST","url":"/v1/responses","body":{"model":"gpt-5","input":"go on"` + member + `}}`
	}
	own := line(`,"previous_response_id":"resp_bob_1"`)
	for _, c := range []struct {
		name, content string
		status        int
		want          string
	}{
		{"plain", own + "\n" + line(`,"previous_response_id":"resp_alice_1"`) + "\n", 404, `line 2: previous_response_id \"resp_alice_1\" was not found`},
		{"escaped key", line(`,"previous_response_\u0069d":"resp_alice_1"`) + "\n", 404, "response_not_found"},
		{"escaped id", line(`,"previous_response_id":"resp\u005falice_1"`) + "\n", 404, "response_not_found"},
		{"second copy", line(`,"previous_response_id":"resp_bob_1","previous_response_id":"resp_alice_1"`) + "\n", 400, "twice"},
		{"folded copy", line(`,"Previous_Response_ID":"resp_alice_1"`) + "\n", 400, "case-insensitive"},
	} {
		t.Run(c.name, func(t *testing.T) {
			body, ct := form(t, c.content)
			status, answer, _ := tg.do(t, "POST", "/v1/files", bobKey, ct, body)
			if status != c.status || !strings.Contains(answer, c.want) {
				t.Fatalf("bob's upload = %d %s; want %d saying %q", status, answer, c.status, c.want)
			}
		})
	}
	if n := m.BatchStats().Calls(); n != 0 {
		t.Fatalf("%d upstream calls; want none", n)
	}
	// Bob's own continuation, and alice's of hers, are stored.
	for _, c := range []struct{ key, content string }{{bobKey, own + "\n" + own + "\n"}, {aliceKey, line(`,"previous_response_id":"resp_alice_1"`)}} {
		body, ct := form(t, c.content)
		if status, answer, _ := tg.do(t, "POST", "/v1/files", c.key, ct, body); status != 200 {
			t.Fatalf("an owner's continuation = %d %s; want 200", status, answer)
		}
	}
}

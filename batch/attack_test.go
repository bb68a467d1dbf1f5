package batch_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"mime/multipart"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

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

// echoUpstream is an OpenAI-shaped batch upstream that quotes, in every
// answer it gives (bodies, headers, downloads, errors), the credential
// and client headers it received, and records them.
type echoUpstream struct {
	url  string
	mu   sync.Mutex
	seen []string // every request's header section
}

func startEchoUpstream(t *testing.T) *echoUpstream {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	u := &echoUpstream{url: "http://" + ln.Addr().String() + "/v1"}
	srv := &fasthttp.Server{Handler: func(rc *fasthttp.RequestCtx) {
		hdr := string(rc.Request.Header.Header())
		u.mu.Lock()
		u.seen = append(u.seen, hdr)
		u.mu.Unlock()
		cred := string(rc.Request.Header.Peek("Authorization"))
		quoted := strconv.Quote("you sent " + cred)
		rc.Response.Header.Set("X-Echo", cred)
		path := string(rc.Path())
		switch {
		case strings.HasSuffix(path, "/content"):
			rc.SetContentType("application/jsonl")
			rc.Response.Header.Set("Content-Disposition", `attachment; filename="`+cred+`.jsonl"`)
			rc.SetBodyString(`{"custom_id":"a","response":{"body":{"echo":` + quoted + `}}}` + "\n")
		case strings.Contains(path, "file-bad"):
			rc.SetStatusCode(400)
			rc.SetContentType("application/json")
			rc.SetBodyString(`{"error":{"message":` + quoted + `,"type":"invalid_request_error","param":null,"code":"bad"}}`)
		default:
			rc.SetContentType("application/json")
			rc.SetBodyString(`{"id":"file-echo-1","object":"file","purpose":"batch","created_at":1,"echo":` + quoted + `}`)
		}
	}}
	go srv.Serve(ln) //nolint:errcheck // ends at Shutdown
	t.Cleanup(func() { _ = srv.Shutdown() })
	return u
}

// TestBatchSecretsStayPut: on every batch call the upstream gets the
// target's credential and never the client's key, and nothing of the
// target's credential reaches the client, even when the upstream quotes
// it in an answer's body, a header, an error or a download.
func TestBatchSecretsStayPut(t *testing.T) {
	u := startEchoUpstream(t)
	const upstreamKey = "sk-oai-upstream-secret-0001"
	store := tenancy.NewMemoryObjects(0, nil)
	tg := newTestGateway(t, fmt.Sprintf(twoKeysYAML, u.url), false, store)
	body, ct := form(t, `{"custom_id":"c","method":"POST","url":"/v1/chat/completions","body":{"model":"gpt-4o","messages":[]}}`+"\n")
	if err := store.Put(context.Background(), tenancy.Object{Kind: tenancy.KindFile, ID: "file-bad-1", Key: "alice", Target: "oai", Purpose: "batch"}, time.Hour); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		method, path, ct string
		body             []byte
	}{
		{"POST", "/v1/files", ct, body},
		{"GET", "/v1/files/file-echo-1", "", nil},
		{"GET", "/v1/files", "", nil},
		{"GET", "/v1/files/file-echo-1/content", "", nil},
		{"GET", "/v1/files/file-bad-1", "", nil},
		{"DELETE", "/v1/files/file-echo-1", "", nil},
	} {
		status, answer, h := tg.do(t, c.method, c.path, aliceKey, c.ct, c.body)
		if status == 0 || !strings.Contains(answer, "you sent") && status != 404 {
			t.Errorf("%s %s = %d %s: the upstream's answer did not come back", c.method, c.path, status, answer)
		}
		if strings.Contains(answer, upstreamKey) || strings.Contains(h.String(), upstreamKey) {
			t.Errorf("%s %s: the target's credential reached the client:\n%s\n%s", c.method, c.path, h, answer)
		}
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if len(u.seen) == 0 {
		t.Fatal("no upstream call")
	}
	for _, h := range u.seen {
		if strings.Contains(h, aliceKey) || !strings.Contains(h, "Bearer "+upstreamKey) {
			t.Errorf("upstream request header:\n%s\nwant the target's key and not the client's", h)
		}
	}
}

// rawForm assembles a multipart/form-data body by hand: parts are written
// as given (head lines, a blank line, content), each after the boundary
// line; closed adds the closing boundary.
func rawForm(closed bool, parts ...[2]string) ([]byte, string) {
	const boundary = "b0undary"
	var b bytes.Buffer
	for _, p := range parts {
		b.WriteString("--" + boundary + "\r\n" + p[0] + "\r\n\r\n" + p[1] + "\r\n")
	}
	if closed {
		b.WriteString("--" + boundary + "--\r\n")
	}
	return b.Bytes(), "multipart/form-data; boundary=" + boundary
}

// TestBatchMultipartTricks: forms the gateway and the provider could read
// differently are refused with no upstream call (two files, two purposes,
// a purpose that is not batch wherever it comes, a field not accepted, a
// body cut before its closing boundary, a part head larger than the
// room an upload has besides its file); what is accepted reaches the
// provider as a form the gateway wrote itself (the file routed, a plain
// file name, the purpose once).
func TestBatchMultipartTricks(t *testing.T) {
	tg, m := twoKeys(t)
	line := `{"custom_id":"c","method":"POST","url":"/v1/chat/completions","body":{"model":"gpt-4o","messages":[]}}`
	file := func(head string) [2]string {
		return [2]string{`Content-Disposition: form-data; name="file"; filename="b.jsonl"` + head, line + "\n"}
	}
	purpose := func(v string) [2]string { return [2]string{`Content-Disposition: form-data; name="purpose"`, v} }
	for _, c := range []struct {
		name   string
		closed bool
		parts  [][2]string
		status int
		want   string
	}{
		{"two files", true, [][2]string{purpose("batch"), file(""), file("")}, 400, "two files"},
		{"two purposes", true, [][2]string{purpose("batch"), purpose("batch"), file("")}, 400, "twice"},
		{"another purpose after the file", true, [][2]string{file(""), purpose("fine-tune")}, 400, "purpose"},
		{"batch then another purpose", true, [][2]string{purpose("batch"), file(""), purpose("assistants")}, 400, "twice"},
		{"an unknown field", true, [][2]string{purpose("batch"), {`Content-Disposition: form-data; name="model"`, "gpt-4o"}, file("")}, 400, "not accepted"},
		{"no closing boundary", false, [][2]string{purpose("batch"), file("")}, 400, "cannot read the upload"},
		{"a huge part head", true, [][2]string{purpose("batch"), file("\r\nX-Pad: " + strings.Repeat("p", 2<<20))}, 413, "besides the file"},
	} {
		t.Run(c.name, func(t *testing.T) {
			body, ct := rawForm(c.closed, c.parts...)
			status, answer, _ := tg.do(t, "POST", "/v1/files", aliceKey, ct, body)
			if status != c.status || !strings.Contains(answer, c.want) {
				t.Fatalf("= %d %s; want %d saying %q", status, answer, c.status, c.want)
			}
		})
	}
	if n := m.BatchStats().Calls(); n != 0 {
		t.Fatalf("%d upstream calls; want none", n)
	}
	// Accepted: the purpose after the file, a file name with path
	// separators and quotes, quoted-printable content (decoded, then
	// routed, then sent decoded).
	qp := strings.Replace(line, `"gpt-4o"`, `"gpt-=34o"`, 1) // =34 is '4'
	body, ct := rawForm(true,
		[2]string{`Content-Disposition: form-data; name="file"; filename="../../etc/x\"y.jsonl"` + "\r\nContent-Transfer-Encoding: quoted-printable", qp + "\n"},
		purpose("batch"))
	status, answer, _ := tg.do(t, "POST", "/v1/files", aliceKey, ct, body)
	if status != 200 {
		t.Fatalf("a plain upload = %d %s", status, answer)
	}
	id := between(answer, `"id":"`, `"`)
	if got := string(m.File(id)); got != line+"\n" {
		t.Errorf("the provider stored %q; want the decoded line the gateway routed", got)
	}
	if strings.Contains(answer, "..") || strings.Contains(answer, "etc") {
		t.Errorf("the provider saw a file name with a path: %s", answer)
	}
}

const mappedYAML = `
strategy:
  mode: conditional
  conditions:
    - {key: model, value: gpt-4o, target_key: oai}
targets:
  - {virtual_key: oai, provider: openai, base_url: %q, api_key: sk-oai-upstream-secret-0001, model_map: {gpt-4o: gpt-4o-2024-08-06}}
auth:
  keys:
    - {name: alice, key: ` + aliceKey + `}
`

// TestBatchLineEncodings: line framings a provider may read otherwise
// than the gateway are refused naming the line, with no upstream call (a
// byte order mark, a second object after a bare CR, a NUL or a U+2028
// between members, a url with a query, another case or a trailing slash,
// a lower-case method); framings that mean the same to every JSON reader
// are stored byte for byte (CRLF line ends, no final newline, escaped
// keys), each model literal rewritten by the member's model_map however
// it was escaped.
func TestBatchLineEncodings(t *testing.T) {
	m, err := mock.Start("127.0.0.1:0", mock.Options{Name: "oai"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	tg := newTestGateway(t, fmt.Sprintf(mappedYAML, m.BaseURL()), false, tenancy.NewMemoryObjects(0, nil))
	line := `{"custom_id":"c","method":"POST","url":"/v1/chat/completions","body":{"model":"gpt-4o","messages":[]}}`
	upload := func(content string) (int, string) {
		body, ct := form(t, content)
		status, answer, _ := tg.do(t, "POST", "/v1/files", aliceKey, ct, body)
		return status, answer
	}
	for _, c := range []struct{ name, content, want string }{
		{"byte order mark", "\ufeff" + line + "\n", "line 1"},
		{"two objects split by CR", line + "\r" + line + "\n", "line 1"},
		{"NUL between members", strings.Replace(line, `,"method"`, ",\x00\"method\"", 1) + "\n", "line 1"},
		{"U+2028 between members", strings.Replace(line, `,"method"`, ",\u2028\"method\"", 1) + "\n", "line 1"},
		{"url with a query", line + "\n" + strings.Replace(line, "completions", "completions?model=gpt-5", 1) + "\n", "line 2"},
		{"url in another case", strings.Replace(line, "/v1/chat", "/V1/Chat", 1) + "\n", "line 1"},
		{"url with a trailing slash", strings.Replace(line, "completions", "completions/", 1) + "\n", "line 1"},
		{"lower-case method", strings.Replace(line, `"POST"`, `"post"`, 1) + "\n", "line 1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			status, answer := upload(c.content)
			if status != 400 || !strings.Contains(answer, c.want) {
				t.Fatalf("= %d %s; want 400 naming %s", status, answer, c.want)
			}
		})
	}
	if n := m.BatchStats().Calls(); n != 0 {
		t.Fatalf("%d upstream calls; want none", n)
	}
	escaped := `{"custom_id":"e","method":"POST","url":"/v1/chat/completions","b\u006fdy":{"m\u006fdel":"gpt\u002d4o","messages":[]}}`
	status, answer := upload(line + "\r\n" + escaped + "\r\n" + line)
	if status != 200 {
		t.Fatalf("CRLF, escapes, no final newline = %d %s", status, answer)
	}
	mapped := strings.Replace(line, `"gpt-4o"`, `"gpt-4o-2024-08-06"`, 1)
	want := mapped + "\r\n" + strings.Replace(escaped, `"gpt\u002d4o"`, `"gpt-4o-2024-08-06"`, 1) + "\r\n" + mapped
	if got := string(m.File(between(answer, `"id":"`, `"`))); got != want {
		t.Fatalf("the provider stored\n%q\nwant\n%q", got, want)
	}
}

package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// fileID uploads lines as key and returns the stored file's id.
func (e *batchEnv) fileID(t *testing.T, key string, lines ...string) string {
	t.Helper()
	status, _, body := e.upload(t, key, "batch", lines...)
	if status != 200 {
		t.Fatalf("upload = %d %s", status, body)
	}
	var f struct{ ID string }
	if err := json.Unmarshal([]byte(body), &f); err != nil || f.ID == "" {
		t.Fatalf("upload answer %s", body)
	}
	return f.ID
}

// jsonID reads the id of an answer.
func jsonID(t *testing.T, body string) string {
	t.Helper()
	var v struct{ ID string }
	if err := json.Unmarshal([]byte(body), &v); err != nil || v.ID == "" {
		t.Fatalf("answer without an id: %s", body)
	}
	return v.ID
}

// TestBatchOwnershipAttacks: another key reading, cancelling, downloading,
// deleting, listing or building a batch on acme's ids, and ids guessed or
// smuggled in a path, all get 404 (or 400 for a cursor), in the API's own
// envelope, and no upstream call.
func TestBatchOwnershipAttacks(t *testing.T) {
	e := newBatchEnv(t, batchOptions{})
	file := e.fileID(t, batchAcmeKey, chatLine("a", "gpt-4o"))
	_, _, body := e.do(t, "POST", "/v1/batches", batchAcmeKey, "application/json",
		strings.NewReader(`{"input_file_id":"`+file+`","endpoint":"/v1/chat/completions","completion_window":"24h"}`))
	batchID := jsonID(t, body)
	var output string
	for range 3 {
		_, _, body = e.do(t, "GET", "/v1/batches/"+batchID, batchAcmeKey, "", nil)
		var b struct {
			OutputFileID string `json:"output_file_id"`
		}
		json.Unmarshal([]byte(body), &b)
		output = b.OutputFileID
	}
	if output == "" {
		t.Fatalf("batch did not complete: %s", body)
	}
	_, _, body = e.do(t, "POST", "/v1/messages/batches", batchAcmeKey, "application/json",
		strings.NewReader(`{"requests":[{"custom_id":"m","params":{"model":"claude-x","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}}]}`))
	msg := jsonID(t, body)
	e.do(t, "GET", "/v1/messages/batches/"+msg, batchAcmeKey, "", nil) // ends it
	// The gateway reads an ended message batch's results itself, off the
	// request path: that call is acme's, and must not land among the
	// attacks' below.
	e.d.Batches().WaitMetered()

	before := e.batchCalls()
	openAI404 := func(status int, body string) bool {
		var v struct {
			Error struct{ Code string } `json:"error"`
		}
		return status == 404 && json.Unmarshal([]byte(body), &v) == nil && v.Error.Code == "not_found"
	}
	anthropic404 := func(status int, body string) bool {
		var v struct {
			Type  string
			Error struct{ Type string } `json:"error"`
		}
		return status == 404 && json.Unmarshal([]byte(body), &v) == nil && v.Type == "error" && v.Error.Type == "not_found_error"
	}
	for _, c := range []struct {
		method, path, body string
		anthropic          bool
	}{
		{"GET", "/v1/files/" + file, "", false},
		{"GET", "/v1/files/" + file + "/content", "", false},
		{"DELETE", "/v1/files/" + file, "", false},
		{"GET", "/v1/files/" + output + "/content", "", false},
		{"DELETE", "/v1/files/" + output, "", false},
		{"GET", "/v1/batches/" + batchID, "", false},
		{"POST", "/v1/batches/" + batchID + "/cancel", "", false},
		{"POST", "/v1/batches", `{"input_file_id":"` + file + `","endpoint":"/v1/chat/completions","completion_window":"24h"}`, false},
		{"GET", "/v1/messages/batches/" + msg, "", true},
		{"GET", "/v1/messages/batches/" + msg + "/results", "", true},
		{"POST", "/v1/messages/batches/" + msg + "/cancel", "", true},
		{"DELETE", "/v1/messages/batches/" + msg, "", true},
		// Guessed, and smuggled through the path.
		{"GET", "/v1/files/file-oai-99", "", false},
		{"GET", "/v1/batches/batch_oai-1", "", false},
		{"GET", "/v1/files/" + file + "%2Fcontent", "", false},
		{"GET", "/v1/files/..%2F" + file, "", false},
		{"GET", "/v1/messages/batches/msgbatch_claude-77/results", "", true},
	} {
		var rd io.Reader
		if c.body != "" {
			rd = strings.NewReader(c.body)
		}
		status, _, body := e.do(t, c.method, c.path, batchGlobexKey, "application/json", rd)
		ok := openAI404(status, body)
		if c.anthropic {
			ok = anthropic404(status, body)
		}
		if !ok {
			t.Errorf("globex %s %s = %d %s; want 404 in the API's envelope", c.method, c.path, status, body)
		}
		if strings.Contains(body, "target") {
			t.Errorf("globex %s %s: the answer speaks of a target: %s", c.method, c.path, body)
		}
	}
	// Lists show globex nothing of acme's, and acme's ids are no cursor.
	for _, p := range []string{"/v1/files", "/v1/batches", "/v1/messages/batches"} {
		status, _, body := e.do(t, "GET", p, batchGlobexKey, "", nil)
		var page struct{ Data []json.RawMessage }
		if status != 200 || json.Unmarshal([]byte(body), &page) != nil || len(page.Data) != 0 {
			t.Errorf("globex lists %s = %d %s; want an empty page", p, status, body)
		}
	}
	for _, p := range []string{"/v1/files?after=" + file, "/v1/batches?after=" + batchID, "/v1/messages/batches?after_id=" + msg,
		"/v1/messages/batches?before_id=" + msg} {
		if status, _, body := e.do(t, "GET", p, batchGlobexKey, "", nil); status != 400 {
			t.Errorf("globex %s = %d %s; want 400 for a cursor it does not own", p, status, body)
		}
	}
	if n := e.batchCalls() - before; n != 0 {
		t.Fatalf("the attacks made %d upstream calls; want none", n)
	}
	// A body naming globex's own file and acme's: the provider would read
	// one, the gateway another. Refused, whichever comes first.
	own := e.fileID(t, batchGlobexKey, chatLine("g", "gpt-4o"))
	before = e.batchCalls()
	for _, b := range []string{
		`{"input_file_id":"` + own + `","input_file_id":"` + file + `","endpoint":"/v1/chat/completions","completion_window":"24h"}`,
		`{"input_file_id":"` + file + `","input_file_id":"` + own + `","endpoint":"/v1/chat/completions","completion_window":"24h"}`,
		`{"input_file_id":"` + own + `","Input_File_Id":"` + file + `","endpoint":"/v1/chat/completions","completion_window":"24h"}`,
	} {
		if status, _, body := e.do(t, "POST", "/v1/batches", batchGlobexKey, "application/json", strings.NewReader(b)); status != 400 {
			t.Errorf("globex's two-file batch = %d %s; want 400", status, body)
		}
	}
	if n := e.batchCalls() - before; n != 0 {
		t.Fatalf("the attacks made %d upstream calls; want none", n)
	}
	// acme still has it all.
	if status, _, body := e.do(t, "GET", "/v1/files/"+file, batchAcmeKey, "", nil); status != 200 {
		t.Fatalf("acme reads its file = %d %s", status, body)
	}
}

// TestBatchRoutingAttacks: uploads that must not be stored anywhere: lines
// for two chains, a model outside the key's allow-list, a line for a
// surface the chain cannot batch, another purpose, malformed and
// oversized lines. Each is refused naming the line, nothing reaches any
// mock, and the spool is gone.
func TestBatchRoutingAttacks(t *testing.T) {
	e := newBatchEnv(t, batchOptions{server: "  max_request_bytes: 4096"})
	embed := `{"custom_id":"e","method":"POST","url":"/v1/embeddings","body":{"model":"claude-x","input":"hi"}}`
	for _, c := range []struct {
		name, key, purpose string
		lines              []string
		status             int
		want               []string
	}{
		{"two chains", batchAcmeKey, "batch", []string{chatLine("1", "gpt-4o"), chatLine("2", "gpt-4o"), chatLine("3", "gpt-4o-mini")},
			400, []string{"line 3", "[oai]", "line 1", "[oai, oai2]"}},
		{"a user claiming another chain", batchAcmeKey, "batch",
			[]string{chatLine("1", "gpt-4o-mini"), chatLine("2", "gpt-4o-mini", `,"user":"vip"`)}, 400, []string{"line 2", "[oai2]"}},
		{"outside the allow-list", batchTightKey, "batch", []string{chatLine("1", "gpt-4o-mini"), chatLine("2", "gpt-4o")},
			403, []string{"line 2", "not allowed"}},
		{"no member batches it", batchAcmeKey, "batch", []string{chatLine("1", "claude-x")}, 404,
			[]string{"[claude, oai]", "batch"}},
		{"a surface not served", batchAcmeKey, "batch", []string{embed}, 404, []string{"line 1", "embeddings"}},
		{"another purpose", batchAcmeKey, "fine-tune", []string{chatLine("1", "gpt-4o")}, 400, []string{"purpose"}},
		{"no purpose", batchAcmeKey, "", []string{chatLine("1", "gpt-4o")}, 400, []string{"purpose"}},
		{"an unknown url", batchAcmeKey, "batch", []string{strings.Replace(chatLine("1", "gpt-4o"), "/v1/chat/completions", "/v1/moderations", 1)},
			400, []string{"line 1", "url"}},
		{"an extra key", batchAcmeKey, "batch", []string{strings.Replace(chatLine("1", "gpt-4o"), `"method"`, `"api_key":"x","method"`, 1)},
			400, []string{"line 1", "api_key"}},
		{"a duplicate body", batchAcmeKey, "batch", []string{strings.TrimSuffix(chatLine("1", "gpt-4o"), "}") + `,"body":{"model":"us-only"}}`},
			400, []string{"line 1", "twice"}},
		{"a duplicate model", batchAcmeKey, "batch", []string{chatLine("1", "gpt-4o", `,"model":"us-only"`)}, 400, []string{"line 1", "model"}},
		{"a line over max_request_bytes", batchAcmeKey, "batch",
			[]string{chatLine("1", "gpt-4o"), chatLine("2", "gpt-4o", `,"x":"`+strings.Repeat("a", 5000)+`"`)}, 413, []string{"line 2"}},
		{"an empty line", batchAcmeKey, "batch", []string{chatLine("1", "gpt-4o"), "", chatLine("3", "gpt-4o")}, 400, []string{"line 2"}},
		{"too many models", batchAcmeKey, "batch", manyModels(300), 400, []string{"line 257", "at most 256 different models"}},
		{"a model id too long", batchAcmeKey, "batch", []string{chatLine("1", "claude-"+strings.Repeat("x", 300))}, 400, []string{"line 1", "over 256 bytes"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := e.batchCalls()
			status, _, body := e.upload(t, c.key, c.purpose, c.lines...)
			if status != c.status {
				t.Fatalf("status %d %s; want %d", status, body, c.status)
			}
			for _, w := range c.want {
				if !strings.Contains(body, w) {
					t.Errorf("answer %s does not say %q", body, w)
				}
			}
			if n := e.batchCalls() - before; n != 0 {
				t.Fatalf("%d upstream calls; want none", n)
			}
			if f := e.spoolFiles(t); len(f) != 0 || e.d.Batches().SpoolUsed() != 0 {
				t.Fatalf("spool left: %v, %d bytes held", f, e.d.Batches().SpoolUsed())
			}
		})
	}
}

// TestBatchMalformedLineInALargeFile: a malformed line in the middle of a
// 40,000-line file is refused naming it; nothing is uploaded, the spool
// is removed.
func TestBatchMalformedLineInALargeFile(t *testing.T) {
	e := newBatchEnv(t, batchOptions{})
	var b strings.Builder
	for i := 1; i <= 40_000; i++ {
		if i == 20_000 {
			b.WriteString(`{"custom_id":"x","method":"POST","url":"/v1/chat/completions","body":{"model":"gpt-4o",}}` + "\n")
			continue
		}
		b.WriteString(chatLine(fmt.Sprint(i), "gpt-4o") + "\n")
	}
	body, ct := multipartFile(t, "batch", b.String())
	status, _, answer := e.do(t, "POST", "/v1/files", batchAcmeKey, ct, bytes.NewReader(body))
	if status != 400 || !strings.Contains(answer, "line 20000") {
		t.Fatalf("upload = %d %s; want 400 naming line 20000", status, answer)
	}
	if n := e.batchCalls(); n != 0 {
		t.Fatalf("%d upstream calls; want none", n)
	}
	if f := e.spoolFiles(t); len(f) != 0 || e.d.Batches().SpoolUsed() != 0 {
		t.Fatalf("spool left: %v", f)
	}
}

// TestBatchBoundUserCannotClaimAnother: a key bound to a user routes its
// lines as that user whatever they say; an unbound key's "user" routes.
func TestBatchBoundUserCannotClaimAnother(t *testing.T) {
	e := newBatchEnv(t, batchOptions{})
	id := e.fileID(t, batchBoundKey, chatLine("1", "gpt-4o-mini", `,"user":"vip"`), chatLine("2", "gpt-4o-mini", `,"user":"vip"`))
	if !strings.HasPrefix(id, "file-oai-") || e.oai2.BatchStats().Uploads != 0 {
		t.Fatalf("the bound key's lines claiming user vip were stored as %s; want on oai (its own chain), not oai2", id)
	}
	id = e.fileID(t, batchAcmeKey, chatLine("1", "gpt-4o-mini", `,"user":"vip"`))
	if !strings.HasPrefix(id, "file-oai2-") {
		t.Fatalf("acme's vip lines were stored as %s; want on oai2", id)
	}
}

// TestBatchUploadFailsOver: a failover-safe failure of the first member
// sends the whole file to the next; a client error does not.
func TestBatchUploadFailsOver(t *testing.T) {
	e := newBatchEnv(t, batchOptions{})
	lines := []string{chatLine("1", "gpt-4o"), chatLine("2", "gpt-4o")}
	e.oai.Fail(mockFailure(503, 1))
	status, h, body := e.upload(t, batchAcmeKey, "batch", lines...)
	if status != 200 || h.Get("X-Gateway-Target") != "oai2" || h.Get("X-Gateway-Attempts") != "2" {
		t.Fatalf("upload = %d %v %s; want stored on oai2 after two attempts", status, h, body)
	}
	if got := string(e.oai2.File(jsonID(t, body))); got != strings.Join(lines, "\n")+"\n" {
		t.Fatalf("oai2 stored %q", got)
	}
	e.oai.Fail(mockFailure(400, 1))
	status, _, body = e.upload(t, batchAcmeKey, "batch", lines...)
	if status != 400 || e.oai2.BatchStats().Uploads != 1 {
		t.Fatalf("upload after a 400 = %d %s (oai2 uploads %d); want the 400, no failover", status, body, e.oai2.BatchStats().Uploads)
	}
}

// TestBatchSpoolBound: while one upload holds the spool space, an upload
// that would take the spools past max_spool_bytes is 503 with
// Retry-After, and nothing is sent anywhere; when the first one's client
// goes away its spool is removed and the space given back.
func TestBatchSpoolBound(t *testing.T) {
	e := newBatchEnv(t, batchOptions{server: "  max_batch_file_bytes: 65536\n  max_spool_bytes: 70000"})
	body, ct := multipartFile(t, "batch", strings.Repeat(chatLine("x", "gpt-4o")+"\n", 300))
	if len(body) < 36000 || len(body) > 65536 {
		t.Fatalf("test body of %d bytes; want 36000 to 65536", len(body))
	}
	// The first upload sends its head and half its body (more than the
	// server reads before the handler), then waits.
	conn, err := net.Dial("tcp", strings.TrimPrefix(e.base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /v1/files HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer %s\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n",
		batchAcmeKey, ct, len(body))
	conn.Write(body[:len(body)/2])
	waitFor(t, 5*time.Second, "the first upload's spool", func() bool { return e.d.Batches().SpoolUsed() > 0 })
	status, h, answer := e.do(t, "POST", "/v1/files", batchAcmeKey, ct, bytes.NewReader(body))
	if status != 503 || h.Get("Retry-After") == "" || !strings.Contains(answer, "upload_capacity_exceeded") {
		t.Fatalf("second upload = %d %v %s; want 503 with Retry-After", status, h, answer)
	}
	conn.Close()
	waitFor(t, 5*time.Second, "the spool given back", func() bool { return e.d.Batches().SpoolUsed() == 0 })
	if f := e.spoolFiles(t); len(f) != 0 {
		t.Fatalf("spool files left: %v", f)
	}
	if e.batchCalls() != 0 {
		t.Fatal("an upstream call")
	}
	// With the space free, the same upload goes through.
	if status, _, answer := e.do(t, "POST", "/v1/files", batchAcmeKey, ct, bytes.NewReader(body)); status != 200 {
		t.Fatalf("upload with room = %d %s", status, answer)
	}
}

// TestBatchUploadExpectContinue: an upload sent with Expect: 100-continue
// is answered from its head: a stranger gets 401 and an upload declared
// over max_batch_file_bytes 413, before any body byte; a good one is
// invited to send its body.
func TestBatchUploadExpectContinue(t *testing.T) {
	e := newBatchEnv(t, batchOptions{server: "  max_batch_file_bytes: 65536"})
	ask := func(key string, length int) string {
		t.Helper()
		conn, err := net.Dial("tcp", strings.TrimPrefix(e.base, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		fmt.Fprintf(conn, "POST /v1/files HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer %s\r\n"+
			"Content-Type: multipart/form-data; boundary=x\r\nContent-Length: %d\r\nExpect: 100-continue\r\n\r\n", key, length)
		conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		b := make([]byte, 64)
		n, _ := conn.Read(b)
		return string(b[:n])
	}
	if got := ask("sy-nobody", 1000); !strings.HasPrefix(got, "HTTP/1.1 401") {
		t.Errorf("a stranger's upload: %q; want 401 before the body", got)
	}
	if got := ask(batchAcmeKey, 65536+(2<<20)); !strings.HasPrefix(got, "HTTP/1.1 413") {
		t.Errorf("an upload declared over the limit: %q; want 413 before the body", got)
	}
	if got := ask(batchAcmeKey, 1000); !strings.HasPrefix(got, "HTTP/1.1 100 Continue") {
		t.Errorf("a good upload: %q; want 100 Continue", got)
	}
}

// manyModels is n lines naming n different models of one chain.
func manyModels(n int) []string {
	var lines []string
	for i := range n {
		lines = append(lines, chatLine(fmt.Sprint(i), fmt.Sprintf("claude-%d", i)))
	}
	return lines
}

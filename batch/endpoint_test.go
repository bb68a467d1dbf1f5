package batch_test

import (
	"strings"
	"testing"
)

// TestBatchEndpointIsTheLines: a batch whose endpoint is not the url of
// its input file's lines is refused (400 naming both) before any upstream
// call, so a lenient OpenAI-compatible server cannot run chat lines as
// embeddings (or responses) requests, surfaces they were never routed
// for; and a file whose lines name different urls is refused at upload,
// naming the first line that differs.
func TestBatchEndpointIsTheLines(t *testing.T) {
	tg, m := twoKeys(t)
	chat := `{"custom_id":"1","method":"POST","url":"/v1/chat/completions","body":{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}}`
	emb := `{"custom_id":"2","method":"POST","url":"/v1/embeddings","body":{"model":"gpt-embed","input":"hi"}}`

	body, ct := form(t, chat+"\n"+emb+"\n")
	status, answer, _ := tg.do(t, "POST", "/v1/files", aliceKey, ct, body)
	if status != 400 || !strings.Contains(answer, `line 2: its url is \"/v1/embeddings\", but line 1's is \"/v1/chat/completions\"`) {
		t.Fatalf("an upload of mixed urls = %d %s; want 400 naming line 2 and both urls", status, answer)
	}
	if n := m.BatchStats().Uploads; n != 0 {
		t.Fatalf("%d uploads reached the provider; want none", n)
	}

	body, ct = form(t, chat+"\n")
	status, answer, _ = tg.do(t, "POST", "/v1/files", aliceKey, ct, body)
	file := between(answer, `"id":"`, `"`)
	if status != 200 || file == "" {
		t.Fatalf("upload = %d %s", status, answer)
	}
	for _, c := range []struct{ name, member, want string }{
		{"embeddings", `,"endpoint":"/v1/embeddings"`, `endpoint \"/v1/embeddings\" is not the url of the lines of file \"` + file + `\", \"/v1/chat/completions\"`},
		{"responses", `,"endpoint":"/v1/responses"`, `endpoint \"/v1/responses\" is not the url`},
		{"unknown", `,"endpoint":"/v1/moderations"`, `endpoint \"/v1/moderations\" is not the url`},
		{"escaped other", `,"endpoint":"/v1/embedding\u0073"`, `endpoint \"/v1/embeddings\" is not the url`},
		{"absent", ``, `no \"endpoint\"; the lines of file \"` + file + `\" are for \"/v1/chat/completions\"`},
		{"not a string", `,"endpoint":["/v1/chat/completions"]`, `\"endpoint\" must be a string`},
	} {
		t.Run(c.name, func(t *testing.T) {
			create := `{"input_file_id":"` + file + `","completion_window":"24h"` + c.member + `}`
			status, answer, _ := tg.do(t, "POST", "/v1/batches", aliceKey, "application/json", []byte(create))
			if status != 400 || !strings.Contains(answer, c.want) {
				t.Fatalf("create %s = %d %s; want 400 saying %s", create, status, answer, c.want)
			}
		})
	}
	if n := m.BatchStats().BatchCreates; n != 0 {
		t.Fatalf("%d creates reached the provider; want none", n)
	}
	create := `{"input_file_id":"` + file + `","endpoint":"/v1/chat/completions","completion_window":"24h"}`
	if status, answer, _ := tg.do(t, "POST", "/v1/batches", aliceKey, "application/json", []byte(create)); status != 200 {
		t.Fatalf("create on the lines' endpoint = %d %s; want 200", status, answer)
	}
}

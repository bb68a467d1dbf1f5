package batch_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/redis/rueidis"

	"github.com/switchyard/switchyard/mock"
	"github.com/switchyard/switchyard/tenancy"
	"github.com/switchyard/switchyard/tenancy/tenancytest"
)

// TestBatchLineNamesAnotherKeysFile: a line of an upload naming, inside
// its body, a file another key uploaded (a chat file part, a Responses
// input_file, escaped or repeated) is refused as the request alone is
// (404 file_not_found, naming the line) and nothing is uploaded: the
// provider runs a stored batch under the gateway's one credential and
// would read the other tenant's file into the batch's answers. The
// uploader's own file goes. On both stores.
func TestBatchLineNamesAnotherKeysFile(t *testing.T) {
	t.Run("memory", func(t *testing.T) { testBatchLineNamesAnotherKeysFile(t, tenancy.NewMemoryObjects(0, nil)) })
	t.Run("redis", func(t *testing.T) {
		c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{tenancytest.StartRedis(t)}, DisableCache: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		testBatchLineNamesAnotherKeysFile(t, tenancy.NewRedisObjects(c, "sy-test:"))
	})
}

func testBatchLineNamesAnotherKeysFile(t *testing.T, store tenancy.ObjectStore) {
	m, err := mock.Start("127.0.0.1:0", mock.Options{Name: "oai"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	tg := newTestGateway(t, fmt.Sprintf(twoKeysYAML, m.BaseURL()), false, store)
	chatLine := func(part string) string {
		return `{"custom_id":"c","method":"POST","url":"/v1/chat/completions","body":{"model":"gpt-4o","messages":[{"role":"user","content":[` + part + `]}]}}`
	}
	upload := func(key, content string) (int, string) {
		body, ct := form(t, content)
		status, answer, _ := tg.do(t, "POST", "/v1/files", key, ct, body)
		return status, answer
	}
	status, answer := upload(aliceKey, chatLine(`{"type":"text","text":"hi"}`)+"\n")
	alices := between(answer, `"id":"`, `"`)
	if status != 200 || alices == "" {
		t.Fatalf("alice's upload = %d %s", status, answer)
	}
	status, answer = upload(bobKey, chatLine(`{"type":"text","text":"hi"}`)+"\n")
	bobs := between(answer, `"id":"`, `"`)
	if status != 200 || bobs == "" {
		t.Fatalf("bob's upload = %d %s", status, answer)
	}
	uploads := m.BatchStats().Uploads
	for _, c := range []struct{ name, content, want string }{
		{"chat file part", chatLine(`{"type":"text","text":"hi"}`) + "\n" + chatLine(`{"type":"file","file":{"file_id":"`+alices+`"}}`) + "\n",
			`line 2: file \"` + alices + `\" was not found`},
		{"escaped key", chatLine(`{"type":"file","file":{"file_\u0069d":"`+alices+`"}}`) + "\n", "file_not_found"},
		{"own, then theirs", chatLine(`{"type":"file","file":{"file_id":"`+bobs+`","file_id":"`+alices+`"}}`) + "\n", "file_not_found"},
		{"responses input_file", `{"custom_id":"r","method":"POST","url":"/v1/responses","body":{"model":"gpt-5","input":[{"role":"user","content":[{"type":"input_file","file_id":"` + alices + `"}]}]}}` + "\n",
			"file_not_found"},
	} {
		t.Run(c.name, func(t *testing.T) {
			status, answer := upload(bobKey, c.content)
			if status != 404 || !strings.Contains(answer, c.want) {
				t.Fatalf("bob's upload = %d %s; want 404 saying %s", status, answer, c.want)
			}
		})
	}
	if n := m.BatchStats().Uploads - uploads; n != 0 {
		t.Fatalf("%d uploads naming another key's file reached the provider; want none", n)
	}
	if status, answer := upload(bobKey, chatLine(`{"type":"file","file":{"file_id":"`+bobs+`"}}`)+"\n"); status != 200 {
		t.Fatalf("bob's line naming his own file = %d %s; want 200", status, answer)
	}
}

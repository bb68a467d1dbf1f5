package hotpath

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/switchyard/switchyard/telemetry"
	"github.com/switchyard/switchyard/tenancy"
	"github.com/switchyard/switchyard/tenancy/tenancytest"
)

const storedYAML = `
SERVER
strategy:
  mode: conditional
  conditions:
    - {key: model, value: x, target_key: up}
    - {key: model, value: claude-x, target_key: claude}
targets:
  - {virtual_key: up, provider: openai, base_url: "URL/v1"}
  - {virtual_key: claude, provider: anthropic, base_url: "URL"}
auth:
  keys:
    - {name: acme, key: sy-acme}
    - {name: globex, key: sy-globex}
`

// storedGateway serves storedYAML (server: the server block, or "") on
// the mock up, with the file owners in objects and response owners in
// memory.
func storedGateway(t *testing.T, up *responsesMock, server string, objects tenancy.ObjectStore) *testGateway {
	t.Helper()
	y := strings.ReplaceAll(storedYAML, "URL", strings.TrimSuffix(up.url, "/v1"))
	tg := startGateway(t, strings.Replace(y, "SERVER", server, 1))
	tg.g.Objects = objects
	tg.g.Owners = tenancy.NewMemory(0, nil)
	return tg
}

// objectStores runs f on a fresh store of each implementation.
func objectStores(t *testing.T, f func(t *testing.T, s tenancy.ObjectStore)) {
	t.Run("memory", func(t *testing.T) { f(t, tenancy.NewMemoryObjects(0, nil)) })
	t.Run("redis", func(t *testing.T) {
		c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{tenancytest.StartRedis(t)}, DisableCache: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		f(t, tenancy.NewRedisObjects(c, "sy-test:"))
	})
}

// TestStoredFileOfAnotherKey: a request whose body names, anywhere and in
// any spelling the upstream would read, a file id the gateway recorded
// for another key is refused before any upstream call (404
// file_not_found, in the surface's envelope); the owner's own requests,
// and ids the gateway never recorded (uploaded to the provider directly),
// go through; with server.unknown_file_ids: refuse the unknown ones are
// refused too. On both stores.
func TestStoredFileOfAnotherKey(t *testing.T) {
	objectStores(t, func(t *testing.T, store tenancy.ObjectStore) {
		ctx := context.Background()
		for _, o := range []tenancy.Object{
			{Kind: tenancy.KindFile, ID: "file-acme-1", Key: "acme", Target: "up", Purpose: "batch_output"},
			{Kind: tenancy.KindFile, ID: "file-globex-1", Key: "globex", Target: "up", Purpose: "batch"},
		} {
			if err := store.Put(ctx, o, time.Hour); err != nil {
				t.Fatal(err)
			}
		}
		up := startResponsesMock(t)
		tg := storedGateway(t, up, "", store)
		chat := func(part string) string {
			return `{"model":"x","messages":[{"role":"user","content":[{"type":"text","text":"sum it up"},` + part + `]}]}`
		}
		responses := func(member string) string {
			return `{"model":"x","input":[{"role":"user","content":[{"type":"input_text","text":"sum it up"}]}]` + member + `}`
		}
		messages := func(block string) string {
			return `{"model":"claude-x","max_tokens":9,"messages":[{"role":"user","content":[` + block + `]}]}`
		}
		refused := []struct{ name, path, body string }{
			{"chat file part", "/v1/chat/completions", chat(`{"type":"file","file":{"file_id":"file-acme-1"}}`)},
			{"escaped key", "/v1/chat/completions", chat(`{"type":"file","file":{"file_\u0069d":"file-acme-1"}}`)},
			{"escaped value", "/v1/chat/completions", chat(`{"type":"file","file":{"file_id":"file\u002dacme-1"}}`)},
			{"own id, then theirs", "/v1/chat/completions", chat(`{"type":"file","file":{"file_id":"file-globex-1","file_id":"file-acme-1"}}`)},
			{"theirs, then own", "/v1/chat/completions", chat(`{"type":"file","file":{"file_id":"file-acme-1","file_id":"file-globex-1"}}`)},
			{"case folded", "/v1/chat/completions", chat(`{"type":"file","file":{"File_ID":"file-acme-1"}}`)},
			{"nested anywhere", "/v1/chat/completions", `{"model":"x","messages":[],"extra":[{"a":{"b":[[{"file_id":"file-acme-1"}]]}}]}`},
			{"responses input_file", "/v1/responses", `{"model":"x","input":[{"role":"user","content":[{"type":"input_file","file_id":"file-acme-1"}]}]}`},
			{"responses input_image", "/v1/responses", `{"model":"x","input":[{"role":"user","content":[{"type":"input_image","file_id":"file-acme-1"}]}]}`},
			{"code interpreter file_ids", "/v1/responses", responses(`,"tools":[{"type":"code_interpreter","container":{"type":"auto","file_ids":["file-globex-1","file-acme-1"]}}]`)},
			{"file_ids spelled with a long s", "/v1/responses", responses(`,"tools":[{"type":"code_interpreter","container":{"type":"auto","file_id\u017f":["file-acme-1"]}}]`)},
			{"messages document", "/v1/messages", messages(`{"type":"document","source":{"type":"file","file_id":"file-acme-1"}}`)},
			{"messages container upload", "/v1/messages", messages(`{"type":"container_upload","file_id":"file-acme-1"}`)},
		}
		before := up.calls()
		for _, c := range refused {
			r := tg.do("POST", c.path, c.body, "Authorization", "Bearer sy-globex")
			want := `"code":"file_not_found"`
			if c.path == "/v1/messages" {
				want = `"type":"not_found_error"`
			}
			if r.Status != 404 || !strings.Contains(r.Body, want) || !strings.Contains(r.Body, `file \"file-acme-1\" was not found`) {
				t.Errorf("%s: globex %s = %d %s; want 404 %s", c.name, c.body, r.Status, r.Body, want)
			}
		}
		if n := up.calls() - before; n != 0 {
			t.Fatalf("%d requests naming another key's file reached the upstream; want none", n)
		}

		// The owner's own, an unknown id, a body naming none: forwarded.
		for _, c := range []struct{ name, key, path, body string }{
			{"acme's own", "sy-acme", "/v1/chat/completions", chat(`{"type":"file","file":{"file_id":"file-acme-1"}}`)},
			{"acme's own, messages", "sy-acme", "/v1/messages", messages(`{"type":"document","source":{"type":"file","file_id":"file-acme-1"}}`)},
			{"globex's own", "sy-globex", "/v1/responses", responses(`,"tools":[{"type":"code_interpreter","container":{"type":"auto","file_ids":["file-globex-1"]}}]`)},
			{"unknown id", "sy-globex", "/v1/chat/completions", chat(`{"type":"file","file":{"file_id":"file-operator-1"}}`)},
			{"not a string", "sy-globex", "/v1/chat/completions", chat(`{"type":"file","file":{"file_id":["file-acme-1"]}}`)},
			{"no id", "sy-globex", "/v1/chat/completions", chat(`{"type":"text","text":"profile_id"}`)},
		} {
			before := up.calls()
			if r := tg.do("POST", c.path, c.body, "Authorization", "Bearer "+c.key); r.Status != 200 || up.calls() != before+1 {
				t.Errorf("%s: %s = %d %s; want it forwarded", c.name, c.body, r.Status, r.Body)
			}
		}

		// unknown_file_ids: refuse.
		strict := storedGateway(t, up, "server: {unknown_file_ids: refuse}", store)
		before = up.calls()
		if r := strict.do("POST", "/v1/chat/completions", chat(`{"type":"file","file":{"file_id":"file-operator-1"}}`),
			"Authorization", "Bearer sy-globex"); r.Status != 404 || !strings.Contains(r.Body, "file_not_found") {
			t.Errorf("strict, unknown id: %d %s; want 404 file_not_found", r.Status, r.Body)
		}
		if r := strict.do("POST", "/v1/chat/completions", chat(`{"type":"file","file":{"file_id":"file-globex-1"}}`),
			"Authorization", "Bearer sy-globex"); r.Status != 200 || up.calls() != before+1 {
			t.Errorf("strict, own id: %d %s; want it forwarded", r.Status, r.Body)
		}
	})
}

// TestStoredFileWithoutKeys: without client keys every request is one
// tenant's: a body naming any file id is forwarded, unread.
func TestStoredFileWithoutKeys(t *testing.T) {
	up := startResponsesMock(t)
	y := strings.ReplaceAll(storedYAML, "URL", strings.TrimSuffix(up.url, "/v1"))
	y = strings.Replace(y[:strings.Index(y, "auth:")], "SERVER", "", 1)
	tg := startGateway(t, y)
	store := tenancy.NewMemoryObjects(0, nil)
	if err := store.Put(context.Background(), tenancy.Object{Kind: tenancy.KindFile, ID: "file-acme-1", Key: "acme", Target: "up"}, time.Hour); err != nil {
		t.Fatal(err)
	}
	tg.g.Objects = store
	body := `{"model":"x","messages":[{"role":"user","content":[{"type":"file","file":{"file_id":"file-acme-1"}}]}]}`
	if r := tg.do("POST", "/v1/chat/completions", body); r.Status != 200 {
		t.Fatalf("no auth: %d %s; want 200", r.Status, r.Body)
	}
}

// TestStoredItemOfAnotherKey: the output items of a key's Responses
// answers (a JSON answer's at once, a stream's when it ends) are that
// key's; another key's request passing one back by id (an item_reference,
// or an item with its id, in any spelling) is 404 item_not_found with no
// upstream call, while the owner's is forwarded.
func TestStoredItemOfAnotherKey(t *testing.T) {
	up := startResponsesMock(t)
	tg := storedGateway(t, up, "", tenancy.NewMemoryObjects(0, nil))
	ended := make(chan struct{}, 8)
	tg.g.Finished = func(e *telemetry.Entry) {
		if e.Stream {
			ended <- struct{}{}
		}
	}
	var items []string
	for _, stream := range []string{"", `,"stream":true`} {
		r := tg.do("POST", "/v1/responses", `{"model":"x","input":"hi"`+stream+`}`, "Authorization", "Bearer sy-acme")
		if r.Status != 200 {
			t.Fatalf("acme create: %d %s", r.Status, r.Body)
		}
		if stream != "" {
			<-ended // the stream's items are recorded before its record
		}
		items = append(items, "msg_"+strings.TrimPrefix(createdID(t, r.Body), "resp_"))
	}
	for _, item := range items {
		before := up.calls()
		for _, input := range []string{
			`[{"type":"item_reference","id":"` + item + `"}]`,
			`[{"id":"` + item + `"}]`,
			`[{"type":"item_reference","i\u0064":"` + item + `"}]`,
			`[{"type":"item_reference","ID":"` + item + `"}]`,
			`[{"type":"message","role":"assistant","id":"` + item + `","content":[]},{"role":"user","content":"go on"}]`,
		} {
			body := `{"model":"x","input":` + input + `}`
			r := tg.do("POST", "/v1/responses", body, "Authorization", "Bearer sy-globex")
			if r.Status != 404 || !strings.Contains(r.Body, `"code":"item_not_found"`) || !strings.Contains(r.Body, item) {
				t.Errorf("globex %s: %d %s; want 404 item_not_found", body, r.Status, r.Body)
			}
		}
		if n := up.calls() - before; n != 0 {
			t.Fatalf("%d requests passing back another key's item reached the upstream", n)
		}
		body := `{"model":"x","input":[{"type":"item_reference","id":"` + item + `"}]}`
		if r := tg.do("POST", "/v1/responses", body, "Authorization", "Bearer sy-acme"); r.Status != 200 || up.calls() != before+1 {
			t.Errorf("acme's own item %s: %d %s; want it forwarded", item, r.Status, r.Body)
		}
	}
	// An item id nobody recorded is forwarded.
	body := `{"model":"x","input":[{"type":"item_reference","id":"msg_elsewhere"}]}`
	if r := tg.do("POST", "/v1/responses", body, "Authorization", "Bearer sy-globex"); r.Status != 200 {
		t.Errorf("unknown item: %d %s; want 200", r.Status, r.Body)
	}
}

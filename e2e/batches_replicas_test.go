package e2e

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"

	"github.com/switchyard/switchyard/tenancy/tenancytest"
)

// TestBatchOwnershipSharedByReplicas: three gateways on one redis-server
// (quotas.store: redis) share the ownership records: a file uploaded
// through one is read, batched, downloaded and deleted through the
// others by its owner, and is 404 for another key at each of them, with
// no upstream call.
func TestBatchOwnershipSharedByReplicas(t *testing.T) {
	addr := tenancytest.StartRedis(t)
	o := batchOptions{extra: "quotas:\n  store: redis\n  redis:\n    url: redis://" + addr + "\n    timeout: 1s\n"}
	a := newBatchEnv(t, o)
	b, c := newBatchEnvOn(t, o, a), newBatchEnvOn(t, o, a)
	file := a.fileID(t, batchAcmeKey, chatLine("1", "gpt-4o"))
	for i, g := range []*batchEnv{a, b, c} {
		if status, _, body := g.do(t, "GET", "/v1/files/"+file, batchAcmeKey, "", nil); status != 200 || jsonID(t, body) != file {
			t.Fatalf("gateway %d: acme reads its file = %d %s", i, status, body)
		}
	}
	_, _, body := b.do(t, "POST", "/v1/batches", batchAcmeKey, "application/json",
		strings.NewReader(`{"input_file_id":"`+file+`","endpoint":"/v1/chat/completions","completion_window":"24h"}`))
	batchID := jsonID(t, body)
	var output string
	for range 3 {
		_, _, body = c.do(t, "GET", "/v1/batches/"+batchID, batchAcmeKey, "", nil)
		var v struct {
			OutputFileID string `json:"output_file_id"`
		}
		json.Unmarshal([]byte(body), &v)
		output = v.OutputFileID
	}
	if output == "" {
		t.Fatalf("batch did not complete through replica c: %s", body)
	}
	// The output file, recorded by c, is acme's at a.
	if status, _, body := a.do(t, "GET", "/v1/files/"+output+"/content", batchAcmeKey, "", nil); status != 200 || !strings.Contains(body, `"custom_id":"1"`) {
		t.Fatalf("replica a downloads the output = %d %s", status, body)
	}
	before := a.batchCalls()
	for i, g := range []*batchEnv{a, b, c} {
		for _, p := range []string{"/v1/files/" + file, "/v1/files/" + output + "/content", "/v1/batches/" + batchID} {
			if status, _, body := g.do(t, "GET", p, batchGlobexKey, "", nil); status != 404 {
				t.Errorf("gateway %d: globex GET %s = %d %s", i, p, status, body)
			}
		}
	}
	if n := a.batchCalls() - before; n != 0 {
		t.Fatalf("globex's reads made %d upstream calls", n)
	}
	// Deleted through c: gone for every replica.
	if status, _, body := c.do(t, "DELETE", "/v1/files/"+file, batchAcmeKey, "", nil); status != 200 {
		t.Fatalf("delete = %d %s", status, body)
	}
	before = a.batchCalls()
	if status, _, _ := a.do(t, "GET", "/v1/files/"+file, batchAcmeKey, "", nil); status != 404 || a.batchCalls() != before {
		t.Fatalf("a deleted file at replica a = %d (upstream calls %d)", status, a.batchCalls()-before)
	}
}

// TestBatchOwnershipIsPerStore: gateways with their own memory stores do
// not know each other's ids (use quotas.store: redis for replicas): an id
// taken from another replica is 404, with no upstream call, even for the
// key that owns it there.
func TestBatchOwnershipIsPerStore(t *testing.T) {
	a := newBatchEnv(t, batchOptions{})
	b := newBatchEnvOn(t, batchOptions{}, a)
	file := a.fileID(t, batchAcmeKey, chatLine("1", "gpt-4o"))
	before := a.batchCalls()
	for _, p := range []string{"/v1/files/" + file, "/v1/files/" + file + "/content"} {
		if status, _, body := b.do(t, "GET", p, batchAcmeKey, "", nil); status != 404 {
			t.Fatalf("replica b GET %s = %d %s", p, status, body)
		}
	}
	if a.batchCalls() != before {
		t.Fatal("an upstream call for an id the replica does not know")
	}
}

// TestBatchListsAcrossTargets: a key's files on two targets list newest
// first, merged, each API's paging followed by openai-go's auto-pager.
func TestBatchListsAcrossTargets(t *testing.T) {
	e := newBatchEnv(t, batchOptions{})
	f1 := e.fileID(t, batchAcmeKey, chatLine("1", "gpt-4o"))
	f2 := e.fileID(t, batchAcmeKey, chatLine("2", "gpt-4o-mini", `,"user":"vip"`)) // on oai2
	f3 := e.fileID(t, batchAcmeKey, chatLine("3", "gpt-4o-mini"))
	if !strings.HasPrefix(f2, "file-oai2-") || !strings.HasPrefix(f3, "file-oai-") {
		t.Fatalf("files %s %s; want them on oai2 and oai", f2, f3)
	}
	status, _, body := e.do(t, "GET", "/v1/files?limit=2", batchAcmeKey, "", nil)
	var page struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
		HasMore bool   `json:"has_more"`
		FirstID string `json:"first_id"`
		LastID  string `json:"last_id"`
	}
	if status != 200 || json.Unmarshal([]byte(body), &page) != nil || len(page.Data) != 2 || page.Data[0].ID != f3 ||
		page.Data[1].ID != f2 || !page.HasMore || page.FirstID != f3 || page.LastID != f2 {
		t.Fatalf("page 1 = %d %s; want [%s %s] and more", status, body, f3, f2)
	}
	status, _, body = e.do(t, "GET", "/v1/files?limit=2&after="+f2, batchAcmeKey, "", nil)
	page.Data = nil
	if status != 200 || json.Unmarshal([]byte(body), &page) != nil || len(page.Data) != 1 || page.Data[0].ID != f1 || page.HasMore {
		t.Fatalf("page 2 = %d %s; want [%s]", status, body, f1)
	}
	var ids []string
	c := e.openai(batchAcmeKey)
	iter := c.Files.ListAutoPaging(testCtx(t), openai.FileListParams{Limit: openai.Int(1)})
	for iter.Next() {
		ids = append(ids, iter.Current().ID)
	}
	if err := iter.Err(); err != nil || strings.Join(ids, ",") != strings.Join([]string{f3, f2, f1}, ",") {
		t.Fatalf("auto-paged = %v, %v", ids, err)
	}
	for _, q := range []string{"limit=0", "limit=101", "limit=x", "order=sideways"} {
		if status, _, body := e.do(t, "GET", "/v1/files?"+q, batchAcmeKey, "", nil); status != 400 {
			t.Errorf("GET /v1/files?%s = %d %s; want 400", q, status, body)
		}
	}
}

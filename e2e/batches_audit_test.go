package e2e

import (
	"bufio"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/switchyard/switchyard/audit"
)

// TestBatchCallsAreAudited: each upload, create, read, cancel and delete
// is an audit line naming the key, the target, the id and the batch API as
// its surface, and the chain verifies; the console's decisions and the
// metrics name them too.
func TestBatchCallsAreAudited(t *testing.T) {
	priv, pub, err := audit.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	admin := ln.Addr().String()
	ln.Close()
	path := filepath.Join(dir, "audit.jsonl")
	e := newBatchEnv(t, batchOptions{extra: "audit:\n  path: " + path + "\n  signing_key: \"" + priv + "\"\n  checkpoint_every: 100ms\nadmin:\n  listen: " + admin + "\n"})
	if err := e.d.StartConsole(); err != nil {
		t.Fatal(err)
	}
	file := e.fileID(t, batchAcmeKey, chatLine("1", "gpt-4o"))
	_, _, body := e.do(t, "POST", "/v1/batches", batchAcmeKey, "application/json",
		strings.NewReader(`{"input_file_id":"`+file+`","endpoint":"/v1/chat/completions","completion_window":"24h"}`))
	batchID := jsonID(t, body)
	e.do(t, "GET", "/v1/batches/"+batchID, batchAcmeKey, "", nil)
	e.do(t, "POST", "/v1/batches/"+batchID+"/cancel", batchAcmeKey, "", nil)
	e.do(t, "GET", "/v1/files/"+file, batchGlobexKey, "", nil) // refused: audited as globex's
	e.do(t, "DELETE", "/v1/files/"+file, batchAcmeKey, "", nil)

	type line struct {
		Key, Surface, Operation, ID string
		Status                      int
		Attempts                    []struct{ Target, Outcome string }
	}
	want := []line{
		{Key: "acme", Surface: "files", Operation: "upload", ID: file, Status: 200},
		{Key: "acme", Surface: "batches", Operation: "create", ID: batchID, Status: 200},
		{Key: "acme", Surface: "batches", Operation: "read", ID: batchID, Status: 200},
		{Key: "acme", Surface: "batches", Operation: "cancel", ID: batchID, Status: 200},
		{Key: "globex", Surface: "files", Operation: "read", ID: file, Status: 404},
		{Key: "acme", Surface: "files", Operation: "delete", ID: file, Status: 200},
	}
	var got []line
	waitFor(t, 5*time.Second, "the audit lines", func() bool {
		got = nil
		f, err := os.Open(path)
		if err != nil {
			return false
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			var l line
			if json.Unmarshal(sc.Bytes(), &l) == nil && l.Surface != "" {
				got = append(got, l)
			}
		}
		return len(got) >= len(want)
	})
	for i, w := range want {
		g := got[i]
		if g.Key != w.Key || g.Surface != w.Surface || g.Operation != w.Operation || g.ID != w.ID || g.Status != w.Status {
			t.Errorf("audit line %d = %+v; want %+v", i, g, w)
		}
		wantTarget := "oai"
		if w.Status == 404 {
			wantTarget = ""
		}
		if (len(g.Attempts) > 0) != (wantTarget != "") || len(g.Attempts) > 0 && g.Attempts[0].Target != wantTarget {
			t.Errorf("audit line %d attempts %+v; want target %q", i, g.Attempts, wantTarget)
		}
	}
	pk, _ := audit.ParsePublicKey(pub)
	waitFor(t, 5*time.Second, "a checkpoint", func() bool {
		r, err := audit.Verify(pk, []string{path})
		return err == nil && r.Unsigned == 0
	})

	// The console's decisions name the operation and the id.
	resp, err := e.http.Get("http://" + admin + "/api/decisions")
	if err != nil {
		t.Fatal(err)
	}
	var raw map[string]json.RawMessage
	json.NewDecoder(resp.Body).Decode(&raw)
	resp.Body.Close()
	if !strings.Contains(string(raw["decisions"]), `"operation":"cancel","object_id":"`+batchID+`"`) {
		t.Fatalf("decisions %s do not show the cancel of %s", raw["decisions"], batchID)
	}
	if m := e.metric(t, `switchyard_batch_calls_total{key="acme",target="oai",operation="batches.cancel"}`); !strings.HasSuffix(m, " 1") {
		t.Fatalf("batch calls metric = %q", m)
	}
	if m := e.metric(t, `switchyard_requests_total{surface="files",status="404"}`); !strings.HasSuffix(m, " 1") {
		t.Fatalf("requests by surface = %q", m)
	}
	waitFor(t, 5*time.Second, "the owned gauge", func() bool {
		return strings.HasSuffix(e.metric(t, `switchyard_batch_objects_owned{key="acme",kind="batch"}`), " 1")
	})
}

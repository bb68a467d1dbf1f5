package daemon

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"mime/multipart"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/switchyard/switchyard/mock"
	"github.com/switchyard/switchyard/tenancy"
	"github.com/switchyard/switchyard/tenancy/tenancytest"
)

// batchProcConfig: one openai target, client key acme, owners and quotas in
// Redis, the audit log, and a spool directory of its own.
func batchProcConfig(upstreamURL, redisAddr, spool, auditPath, signingKey string) string {
	return fmt.Sprintf(`
server: {listen: "127.0.0.1:1", spool_dir: %q}
log: {access_log: false}
strategy:
  mode: conditional
  conditions:
    - {key: model, value: gpt-4o, target_key: oai}
targets:
  - {virtual_key: oai, provider: openai, base_url: %q, api_key: sk-upstream-secret}
auth:
  keys:
    - {name: acme, key: sy-acme-batch-client-key}
quotas:
  store: redis
  redis: {url: "redis://%s", timeout: 1s}
audit:
  path: %q
  signing_key: %q
  checkpoint_every: 100ms
`, spool, upstreamURL, redisAddr, auditPath, signingKey)
}

const batchLine = `{"custom_id":"x","method":"POST","url":"/v1/chat/completions","body":{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}}` + "\n"

// TestBatchUploadKilled kills the binary with SIGKILL in the middle of an
// upload: the client gets an error, no id is recorded for it (the Redis
// store holds the one finished upload only), nothing reached the
// provider, the audit log verifies, and the next start removes the dead
// process's spool file.
func TestBatchUploadKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	dir := t.TempDir()
	bin := buildBinary(t, dir)
	priv, pub := keygen(t, bin)
	up := startMock(t, mock.Options{Name: "oai"})
	redis := tenancytest.StartRedis(t)
	spool := filepath.Join(dir, "spool")
	if err := os.Mkdir(spool, 0o700); err != nil {
		t.Fatal(err)
	}
	auditPath := filepath.Join(dir, "audit.jsonl")
	cfg := filepath.Join(dir, "switchyard.yaml")
	writeFile(t, cfg, batchProcConfig(up.BaseURL(), redis, spool, auditPath, priv))
	p := startProc(t, bin, cfg)

	// A finished upload first.
	var b bytes.Buffer
	w := multipart.NewWriter(&b)
	w.WriteField("purpose", "batch")
	fw, _ := w.CreateFormFile("file", "a.jsonl")
	io.WriteString(fw, batchLine)
	w.Close()
	req, _ := http.NewRequest("POST", "http://"+p.addr+"/v1/files", &b)
	req.Header.Set("Authorization", "Bearer sy-acme-batch-client-key")
	req.Header.Set("Content-Type", w.FormDataContentType())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("first upload = %d", resp.StatusCode)
	}
	// Its audit line reaches the file within ~100 ms; the kill comes after.
	waitFor(t, 10*time.Second, "the upload's audit line", func() bool {
		b, _ := os.ReadFile(auditPath)
		return bytes.Contains(b, []byte(`"operation":"upload"`))
	})

	// The second: 64 MiB declared, a few MiB sent, then the kill.
	conn, err := net.Dial("tcp", p.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	const boundary = "killedupload"
	head := "--" + boundary + "\r\nContent-Disposition: form-data; name=\"purpose\"\r\n\r\nbatch\r\n--" + boundary +
		"\r\nContent-Disposition: form-data; name=\"file\"; filename=\"big.jsonl\"\r\n\r\n"
	fmt.Fprintf(conn, "POST /v1/files HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer sy-acme-batch-client-key\r\n"+
		"Content-Type: multipart/form-data; boundary=%s\r\nContent-Length: %d\r\n\r\n%s", boundary, 64<<20, head)
	chunk := []byte(strings.Repeat(batchLine, 1000))
	for sent := 0; sent < 4<<20; sent += len(chunk) {
		if _, err := conn.Write(chunk); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, 10*time.Second, "the upload's spool file", func() bool {
		names, _ := filepath.Glob(filepath.Join(spool, "switchyard-upload-*"))
		return len(names) == 1
	})
	_ = p.cmd.Process.Kill()
	<-p.done
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	answer, err := io.ReadAll(conn)
	if len(answer) != 0 && err == nil {
		t.Fatalf("the killed upload's client got an answer: %q", answer)
	}

	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{redis}, DisableCache: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	objs, _, err := tenancy.NewRedisObjects(c, "switchyard:").List(ctx, "acme", tenancy.KindFile, tenancy.Page{Limit: 10})
	if err != nil || len(objs) != 1 {
		t.Fatalf("records after the kill = %+v, %v; want the finished upload's only", objs, err)
	}
	if n := up.BatchStats().Uploads; n != 1 {
		t.Fatalf("the provider received %d uploads; want 1 (the killed one was never sent)", n)
	}
	code, out := verify(t, bin, pub, auditPath)
	if code != 0 {
		t.Fatalf("audit verify after kill -9: exit %d %s", code, out)
	}
	// The finished upload's line is there (the writer flushes within
	// 100 ms; the kill came later).
	if !strings.Contains(out, "(1 requests,") {
		t.Fatalf("audit verify: %s; want the finished upload's line", out)
	}

	// The next start removes the dead process's spool file.
	p = startProc(t, bin, cfg)
	if names, _ := filepath.Glob(filepath.Join(spool, "switchyard-upload-*")); len(names) != 0 {
		t.Fatalf("spool files after a restart: %v", names)
	}
	_ = p.cmd.Process.Kill()
	<-p.done
}

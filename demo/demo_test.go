// Package demo holds `make demo`: run.sh starts mock providers and the
// gateway with demo.yaml. These tests check that demo.yaml is valid with
// the ports the script exports, that the gateway routes each request the
// script prints as the script says, and that the script itself starts and
// stops cleanly.
package demo

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/switchyard/switchyard/config"
	"github.com/switchyard/switchyard/daemon"
	"github.com/switchyard/switchyard/mock"
)

// portEnv are the variables run.sh exports and demo.yaml reads, by mock name.
var portEnv = map[string]string{
	"openai":           "DEMO_OPENAI_PORT",
	"claude-primary":   "DEMO_CLAUDE_PRIMARY_PORT",
	"claude-secondary": "DEMO_CLAUDE_SECONDARY_PORT",
	"eu":               "DEMO_EU_PORT",
}

// startMocks starts the four mock providers as run.sh does (same names,
// same key, short streams) on free ports and exports their ports.
func startMocks(t *testing.T) map[string]*mock.Server {
	t.Helper()
	ms := map[string]*mock.Server{}
	for name, env := range portEnv {
		m, err := mock.Start("127.0.0.1:0", mock.Options{Name: name, APIKey: "sk-demo", StreamEvents: 5})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = m.Close() })
		_, port, _ := net.SplitHostPort(m.Addr())
		t.Setenv(env, port)
		ms[name] = m
	}
	startCloudMock(t)
	return ms
}

// startCloudMock starts the Azure/Vertex/Gemini mock as run.sh does and
// points DEMO_CLOUD_PORT and DEMO_VERTEX_KEY at it.
func startCloudMock(t *testing.T) *mock.Cloud {
	t.Helper()
	c, err := mock.StartCloud("127.0.0.1:0", mock.CloudOptions{ClientSecret: "demo-entra-secret", GeminiKey: "demo-gemini-key"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	key, err := mock.ServiceAccountKey(c.URL() + "/token")
	if err != nil {
		t.Fatal(err)
	}
	path := t.TempDir() + "/vertex-sa.json"
	if err := os.WriteFile(path, key, 0o600); err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(c.URL(), "http://"))
	t.Setenv("DEMO_CLOUD_PORT", port)
	t.Setenv("DEMO_VERTEX_KEY", path)
	return c
}

// TestDemoConfigLoads: demo.yaml is valid with the ports substituted, and
// with the script's defaults.
func TestDemoConfigLoads(t *testing.T) {
	for _, env := range portEnv {
		t.Setenv(env, "") // empty: ${VAR:-default} takes the script's default
	}
	t.Setenv("DEMO_ADMIN_LISTEN", "")
	cfg, err := config.Load("demo.yaml")
	if err != nil {
		t.Fatalf("demo.yaml with the default ports: %v", err)
	}
	if got := cfg.Targets[0].BaseURL; got != "http://127.0.0.1:18101/v1" {
		t.Fatalf("default openai base_url %q", got)
	}

	ms := startMocks(t)
	cfg, err = config.Load("demo.yaml")
	if err != nil {
		t.Fatalf("demo.yaml with the script's ports: %v", err)
	}
	if cfg.Admin.Listen != "127.0.0.1:9090" || cfg.Admin.HasKey {
		t.Errorf("admin %+v, want the console on 127.0.0.1:9090 without a key", cfg.Admin)
	}
	if cfg.Server.Listen != "127.0.0.1:8080" {
		t.Errorf("server.listen %q, want 127.0.0.1:8080 (make demo's address)", cfg.Server.Listen)
	}
	var names []string
	for _, tg := range cfg.Targets {
		names = append(names, tg.VirtualKey)
		if ms[tg.VirtualKey] == nil {
			continue // a cloud provider, served by the cloud mock
		}
		if want := ms[tg.VirtualKey].BaseURL(); tg.BaseURL != want {
			t.Errorf("target %s: base_url %q, want %q", tg.VirtualKey, tg.BaseURL, want)
		}
		if tg.Provider != config.ProviderOpenAI || tg.APIKey != "sk-demo" {
			t.Errorf("target %s: provider %q key %q, want openai/sk-demo", tg.VirtualKey, tg.Provider, tg.APIKey)
		}
	}
	if want := []string{"openai", "claude-primary", "claude-secondary", "eu", "azure-eu", "vertex-eu", "gemini"}; !reflect.DeepEqual(names, want) {
		t.Errorf("targets %v, want %v", names, want)
	}
}

// reply is what the demo shows of one answer.
type reply struct {
	status                        int
	rule, target, model, attempts string
	body                          string
}

func post(t *testing.T, c *http.Client, url, body string, hdr map[string]string) reply {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	h := resp.Header
	return reply{resp.StatusCode, h.Get("X-Gateway-Rule"), h.Get("X-Gateway-Target"),
		h.Get("X-Gateway-Model"), h.Get("X-Gateway-Attempts"), string(b)}
}

// answeredBy returns the mock name in a chat completion's system_fingerprint.
func answeredBy(t *testing.T, body string) string {
	t.Helper()
	var v struct {
		SystemFingerprint string `json:"system_fingerprint"`
	}
	if err := json.Unmarshal([]byte(body), &v); err != nil {
		t.Fatalf("not a chat completion: %s", body)
	}
	return v.SystemFingerprint
}

// TestDemoScenarios serves demo.yaml in-process in front of the four mocks
// and sends each request run.sh prints, checking what the script says it
// shows.
func TestDemoScenarios(t *testing.T) {
	ms := startMocks(t)
	d, err := daemon.New("demo.yaml", "127.0.0.1:0", io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := d.Listen()
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = d.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = d.Shutdown(ctx)
	})
	g := "http://" + d.Addr().String()
	c := &http.Client{Timeout: 10 * time.Second}
	chat := `/v1/chat/completions`
	msg := `"messages":[{"role":"user","content":"hi"}]`

	check := func(name string, r reply, status int, rule, target, model, attempts string) {
		t.Helper()
		got := reply{r.status, r.rule, r.target, r.model, r.attempts, ""}
		want := reply{status, rule, target, model, attempts, ""}
		if got != want {
			t.Fatalf("%s: got %+v, want %+v\nbody: %s", name, got, want, r.body)
		}
		// The cloud targets share one mock; the X-Gateway-* headers say enough.
		if status == http.StatusOK && ms[target] != nil && answeredBy(t, r.body) != target {
			t.Fatalf("%s: answered by mock %q, want %q", name, answeredBy(t, r.body), target)
		}
	}

	// 1. Exact-model rule.
	check("gpt-4o", post(t, c, g+chat, `{"model":"gpt-4o",`+msg+`}`, nil), 200, "0", "openai", "gpt-4o", "1")

	// 2. Prefix chain: primary answers; told to fail, the secondary does.
	claude := `{"model":"claude-sonnet-4-6",` + msg + `}`
	check("claude", post(t, c, g+chat, claude, nil), 200, "1", "claude-primary", "claude-sonnet-4-6", "1")
	p := ms["claude-primary"]
	if r := post(t, c, "http://"+p.Addr()+"/_mock/fail?status=503&count=3", "", nil); r.status != 200 {
		t.Fatalf("the script's fail curl: %d %s", r.status, r.body)
	}
	check("claude, primary failing", post(t, c, g+chat, claude, nil),
		200, "1", "claude-secondary", "anthropic.claude-sonnet-4-6", "2")

	// 3. User rule; and first match wins for a claude model with user vip.
	check("vip", post(t, c, g+chat, `{"model":"gpt-4o-mini","user":"vip",`+msg+`}`, nil), 200, "2", "openai", "gpt-4o-mini", "1")
	_, _ = http.Post("http://"+p.Addr()+"/_mock/reset", "", nil)
	check("claude vip", post(t, c, g+chat, `{"model":"claude-haiku-4-5","user":"vip",`+msg+`}`, nil),
		200, "1", "claude-primary", "claude-haiku-4-5", "1")

	// 4. Metadata rule.
	check("gold", post(t, c, g+chat, `{"model":"mistral-large",`+msg+`}`, map[string]string{"X-Gateway-Metadata": `{"tier":"gold"}`}),
		200, "3", "eu", "mistral-large", "1")

	// 5. No match: targets[0] alone, which does not serve the model.
	euBefore := ms["eu"].Stats().Requests
	r := post(t, c, g+chat, `{"model":"mistral-large",`+msg+`}`, nil)
	if r.status != 404 || r.rule != "fallback" || !strings.Contains(r.body, `"code":"model_not_found"`) {
		t.Fatalf("mistral-large without metadata: %d rule %q %s, want 404 model_not_found", r.status, r.rule, r.body)
	}
	if ms["eu"].Stats().Requests != euBefore {
		t.Fatal("the unmatched request reached eu")
	}

	// 6. /v1/models lists the exact ids the rules route to a serving target.
	resp, err := c.Get(g + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	var list struct {
		Data []struct{ ID string } `json:"data"`
	}
	err = json.NewDecoder(resp.Body).Decode(&list)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, m := range list.Data {
		ids = append(ids, m.ID)
	}
	if want := []string{"claude-haiku-4-5", "claude-sonnet-4-6", "eu-chat", "gpt-4o", "gpt-4o-mini"}; !reflect.DeepEqual(ids, want) {
		t.Fatalf("/v1/models ids %v, want %v", ids, want)
	}

	// 6b. The cloud providers: eu-chat on Azure, then on Vertex (Claude) when
	// Azure fails; the Messages API on the same chain, which Azure answers
	// translated from chat (docs/providers.md, Translation); Gemini.
	check("eu-chat", post(t, c, g+chat, `{"model":"eu-chat",`+msg+`}`, nil), 200, "4", "azure-eu", "gpt-4o-dzeu", "1")
	if r := post(t, c, "http://127.0.0.1:"+os.Getenv("DEMO_CLOUD_PORT")+"/_mock/fail?status=503&count=1", "", nil); r.status != 200 {
		t.Fatalf("cloud fail: %d", r.status)
	}
	check("eu-chat, azure failing", post(t, c, g+chat, `{"model":"eu-chat",`+msg+`}`, nil), 200, "4", "vertex-eu", "claude-sonnet-4-5@20250929", "2")
	m := post(t, c, g+"/v1/messages", `{"model":"eu-chat","max_tokens":64,`+msg+`}`, nil)
	check("eu-chat messages", m, 200, "4", "azure-eu", "gpt-4o-dzeu", "1")
	if !strings.Contains(m.body, `"type":"message"`) {
		t.Errorf("eu-chat messages: %s, want an Anthropic message", m.body)
	}
	check("gemini", post(t, c, g+chat, `{"model":"gemini-2.5-flash",`+msg+`}`, nil), 200, "5", "gemini", "gemini-2.5-flash", "1")

	// The stream the script prints.
	s := post(t, c, g+chat, `{"model":"gpt-4o","stream":true,`+msg+`}`, nil)
	if s.status != 200 || !strings.HasSuffix(strings.TrimSpace(s.body), "data: [DONE]") {
		t.Fatalf("stream: %d %s", s.status, s.body)
	}
}

// freePort returns a port free on 127.0.0.1 a moment ago.
func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
}

// TestRunScript runs demo/run.sh as make demo does (on free ports), waits
// for its instructions, sends the failover scenario through it, then
// delivers Ctrl-C (SIGINT to its process group) and checks that the script
// exits and that the gateway and every mock are gone.
func TestRunScript(t *testing.T) {
	if testing.Short() {
		t.Skip("builds two binaries")
	}
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("run.sh needs curl")
	}
	ports := map[string]string{"DEMO_LISTEN": "127.0.0.1:" + freePort(t), "DEMO_ADMIN_LISTEN": "127.0.0.1:" + freePort(t)}
	env := os.Environ()
	for _, e := range portEnv {
		ports[e] = freePort(t)
	}
	ports["DEMO_CLOUD_PORT"] = freePort(t)
	for k, v := range ports {
		env = append(env, k+"="+v)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "./run.sh")
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }() // only if the test fails midway

	var text strings.Builder
	ready := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			fmt.Fprintln(&text, sc.Text())
			if strings.HasPrefix(sc.Text(), "Ctrl-C stops") {
				close(ready)
			}
		}
	}()
	select {
	case <-ready:
	case <-done:
		t.Fatalf("run.sh ended early:\n%s", text.String())
	case <-time.After(2 * time.Minute):
		t.Fatal("run.sh did not become ready")
	}

	g := "http://" + ports["DEMO_LISTEN"]
	c := &http.Client{Timeout: 10 * time.Second}
	// The console's URL comes first, and the console answers there.
	console := "http://" + ports["DEMO_ADMIN_LISTEN"] + "/"
	if i, j := strings.Index(text.String(), "Operator's console: "+console), strings.Index(text.String(), "Switchyard is serving"); i < 0 || i > j {
		t.Fatalf("the script does not print the console's URL %s first:\n%s", console, text.String())
	}
	if resp, err := c.Get(console + "api/status"); err != nil || resp.StatusCode != 200 {
		t.Fatalf("console at %s: %v %v", console, resp, err)
	} else {
		resp.Body.Close()
	}
	primary := "http://127.0.0.1:" + ports["DEMO_CLAUDE_PRIMARY_PORT"]
	if !strings.Contains(text.String(), "curl -s -XPOST '"+primary+"/_mock/fail?status=503&count=3'") {
		t.Fatalf("the script does not print the fail curl for the primary:\n%s", text.String())
	}
	if r := post(t, c, primary+"/_mock/fail?status=503&count=3", "", nil); r.status != 200 {
		t.Fatalf("fail curl: %d", r.status)
	}
	r := post(t, c, g+"/v1/chat/completions", `{"model":"claude-sonnet-4-6","messages":[]}`, nil)
	if r.status != 200 || r.target != "claude-secondary" || r.attempts != "2" {
		t.Fatalf("failover through the script's gateway: %+v", r)
	}

	// The cloud providers through the script's gateway: Azure with an
	// Entra ID token from the cloud mock, then Claude on Vertex.
	r = post(t, c, g+"/v1/chat/completions", `{"model":"eu-chat","messages":[{"role":"user","content":"hi"}]}`, nil)
	if r.status != 200 || r.target != "azure-eu" {
		t.Fatalf("eu-chat through the script's gateway: %+v", r)
	}
	cloud := "http://127.0.0.1:" + ports["DEMO_CLOUD_PORT"]
	if r := post(t, c, cloud+"/_mock/fail?status=503&count=3", "", nil); r.status != 200 {
		t.Fatalf("cloud fail curl: %d", r.status)
	}
	r = post(t, c, g+"/v1/chat/completions", `{"model":"eu-chat","messages":[{"role":"user","content":"hi"}]}`, nil)
	if r.status != 200 || r.target != "vertex-eu" || !strings.Contains(r.body, "hello from vertex") {
		t.Fatalf("eu-chat failover to vertex through the script's gateway: %+v", r)
	}

	if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() { <-done; waited <- cmd.Wait() }()
	select {
	case err := <-waited:
		if err != nil {
			t.Fatalf("run.sh after Ctrl-C: %v\n%s", err, text.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("run.sh did not stop on Ctrl-C")
	}
	for name, p := range ports {
		addr := p
		if !strings.Contains(addr, ":") {
			addr = "127.0.0.1:" + p
		}
		if conn, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			conn.Close()
			t.Errorf("%s (%s) still accepts connections after Ctrl-C", name, addr)
		}
	}
}

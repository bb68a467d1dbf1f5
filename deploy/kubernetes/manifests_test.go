// Package kubernetes holds no code: its test loads the manifests in this
// directory and checks the invariants whose breakage only shows once
// deployed (probes on the wrong port, a config that does not load, a grace
// period shorter than the drain, a ${VAR} with no environment entry).
package kubernetes

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/goccy/go-yaml"

	"github.com/switchyard/switchyard/cli"
	"github.com/switchyard/switchyard/config"
)

// manifests reads every *.yaml here but kustomization.yaml: file -> raw.
func manifests(t *testing.T) map[string][]byte {
	t.Helper()
	files, err := filepath.Glob("*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]byte{}
	for _, f := range files {
		if f == "kustomization.yaml" {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(b, []byte("\n---")) {
			t.Fatalf("%s: one object per file, please (the checks read one)", f)
		}
		out[f] = b
	}
	return out
}

func decode(t *testing.T, file string, b []byte, v any) {
	t.Helper()
	if err := yaml.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
}

// set is every manifest decoded, by kind (one object of each).
type set struct {
	files      map[string]object // file -> its object header
	configMap  object
	secret     object
	deployment deployment
	service    service
	pdb        pdb
	hpa        hpa
}

func load(t *testing.T) set {
	t.Helper()
	s := set{files: map[string]object{}}
	seen := map[string]string{}
	for f, b := range manifests(t) {
		var o object
		decode(t, f, b, &o)
		if o.APIVersion == "" || o.Kind == "" || o.Metadata.Name == "" {
			t.Fatalf("%s: apiVersion, kind and metadata.name are required", f)
		}
		if prev, dup := seen[o.Kind]; dup {
			t.Fatalf("%s and %s are both a %s", prev, f, o.Kind)
		}
		seen[o.Kind] = f
		s.files[f] = o
		switch o.Kind {
		case "ConfigMap":
			s.configMap = o
		case "Secret":
			s.secret = o
		case "Deployment":
			decode(t, f, b, &s.deployment)
		case "Service":
			decode(t, f, b, &s.service)
		case "PodDisruptionBudget":
			decode(t, f, b, &s.pdb)
		case "HorizontalPodAutoscaler":
			decode(t, f, b, &s.hpa)
		default:
			t.Fatalf("%s: kind %s is not checked by this test; add its checks", f, o.Kind)
		}
	}
	for _, k := range []string{"ConfigMap", "Secret", "Deployment", "Service", "PodDisruptionBudget", "HorizontalPodAutoscaler"} {
		if seen[k] == "" {
			t.Fatalf("no %s manifest", k)
		}
	}
	return s
}

// gateway returns the switchyard container.
func (s set) gateway(t *testing.T) container {
	t.Helper()
	for _, c := range s.deployment.Spec.Template.Spec.Containers {
		if c.Name == "switchyard" {
			return c
		}
	}
	t.Fatal("the Deployment has no container named switchyard")
	return container{}
}

// env is the container's environment as the process would see it: literal
// values as written, Secret references as a dummy value naming the key.
func (s set) env(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, e := range s.gateway(t).Env {
		switch {
		case e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil:
			out[e.Name] = "dummy-" + e.ValueFrom.SecretKeyRef.Key
		case e.ValueFrom == nil:
			out[e.Name] = e.Value
		default:
			t.Fatalf("env %s: only values and secretKeyRef are checked", e.Name)
		}
	}
	return out
}

// configFile returns the ConfigMap key the -config argument names and the
// mounted path, checking the mount on the way.
func (s set) configFile(t *testing.T) (key, path string) {
	t.Helper()
	c := s.gateway(t)
	i := slices.Index(c.Args, "-config")
	if i < 0 || i+1 >= len(c.Args) {
		t.Fatalf("container args %v: want -config FILE", c.Args)
	}
	path = c.Args[i+1]
	vol := ""
	for _, v := range s.deployment.Spec.Template.Spec.Volumes {
		if v.ConfigMap != nil && v.ConfigMap.Name == s.configMap.Metadata.Name {
			vol = v.Name
		}
	}
	if vol == "" {
		t.Fatalf("no volume holds ConfigMap %s", s.configMap.Metadata.Name)
	}
	for _, m := range c.VolumeMounts {
		if m.Name != vol {
			continue
		}
		if m.SubPath != "" {
			t.Fatalf("config volume mounted with subPath %q: kubelet never updates a subPath mount, so config_watch would never see a change", m.SubPath)
		}
		key, ok := strings.CutPrefix(path, strings.TrimSuffix(m.MountPath, "/")+"/")
		if !ok || strings.Contains(key, "/") {
			t.Fatalf("-config %s is not a file of the config mount %s", path, m.MountPath)
		}
		if _, ok := s.configMap.Data[key]; !ok {
			t.Fatalf("-config %s: ConfigMap %s has no key %q", path, s.configMap.Metadata.Name, key)
		}
		return key, path
	}
	t.Fatalf("volume %s is not mounted in the container", vol)
	return "", ""
}

// parsedConfig loads the ConfigMap's config with config.Parse and the
// Deployment's environment alone (not the test's).
func (s set) parsedConfig(t *testing.T) (*config.Config, string) {
	t.Helper()
	key, _ := s.configFile(t)
	env := s.env(t)
	raw := s.configMap.Data[key]
	cfg, err := config.Parse(key, []byte(raw), func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if err != nil {
		t.Fatalf("the ConfigMap's %s does not load with the Deployment's environment:\n%v", key, err)
	}
	return cfg, raw
}

// TestKustomizationListsEveryManifest: kubectl apply -k applies only what
// kustomization.yaml lists; a manifest left out is silently not deployed.
func TestKustomizationListsEveryManifest(t *testing.T) {
	b, err := os.ReadFile("kustomization.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var k struct {
		Kind      string   `yaml:"kind"`
		Resources []string `yaml:"resources"`
	}
	decode(t, "kustomization.yaml", b, &k)
	if k.Kind != "Kustomization" {
		t.Fatalf("kustomization.yaml kind %q", k.Kind)
	}
	var files []string
	for f := range manifests(t) {
		files = append(files, f)
	}
	slices.Sort(files)
	listed := slices.Clone(k.Resources)
	slices.Sort(listed)
	if !slices.Equal(files, listed) {
		t.Fatalf("kustomization.yaml resources %v; the directory holds %v", listed, files)
	}
}

// TestConfigMapPassesValidate: the embedded config passes `switchyard
// validate -strict` (the same code path, lints included) with the
// variables the Deployment sets, and only those.
func TestConfigMapPassesValidate(t *testing.T) {
	s := load(t)
	cfg, raw := s.parsedConfig(t)
	if cfg.Server.ConfigWatch <= 0 {
		t.Errorf("server.config_watch is off; a ConfigMap update would need a restart")
	}
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte(raw), 0o600); err != nil {
		t.Fatal(err)
	}
	// Clear the provider defaults the test's own environment might set,
	// then set exactly the Deployment's.
	for _, p := range []string{"OPENAI", "ANTHROPIC", "BEDROCK"} {
		t.Setenv(p+"_API_KEY", "")
		os.Unsetenv(p + "_API_KEY")
		t.Setenv(p+"_BASE_URL", "")
		os.Unsetenv(p + "_BASE_URL")
	}
	for k, v := range s.env(t) {
		t.Setenv(k, v)
	}
	var out, errOut bytes.Buffer
	if code := cli.Main([]string{"validate", "-strict", "-config", path}, &out, &errOut); code != 0 {
		t.Fatalf("switchyard validate -strict: exit %d\n%s%s", code, out.String(), errOut.String())
	}
	t.Logf("validate: %s", strings.TrimSpace(out.String()))
}

// TestEveryVarHasAnEnvEntry: a ${VAR} with no env entry makes every pod
// fail to start ("unset variable"); a secretKeyRef naming a key the Secret
// lacks makes it fail to be created.
func TestEveryVarHasAnEnvEntry(t *testing.T) {
	s := load(t)
	key, _ := s.configFile(t)
	env := s.env(t)
	vars := regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)(:-[^}]*)?\}`).FindAllStringSubmatch(s.configMap.Data[key], -1)
	if len(vars) == 0 {
		t.Fatal("the config references no ${VAR}; provider keys belong in the Secret")
	}
	for _, m := range vars {
		if _, ok := env[m[1]]; !ok && m[2] == "" {
			t.Errorf("${%s} has no env entry in the Deployment", m[1])
		}
	}
	for _, e := range s.gateway(t).Env {
		if e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil {
			continue
		}
		ref := e.ValueFrom.SecretKeyRef
		if ref.Name != s.secret.Metadata.Name {
			t.Errorf("env %s refers to Secret %q; the manifest is %q", e.Name, ref.Name, s.secret.Metadata.Name)
		}
		_, inString := s.secret.StringData[ref.Key]
		_, inData := s.secret.Data[ref.Key]
		if !inString && !inData {
			t.Errorf("env %s refers to key %q, which Secret %s lacks", e.Name, ref.Key, ref.Name)
		}
	}
}

// portOf resolves a probe or Service port (a number or a container port
// name) to a number.
func portOf(t *testing.T, c container, p any) int {
	t.Helper()
	switch v := p.(type) {
	case uint64:
		return int(v)
	case int64:
		return int(v)
	case int:
		return v
	case string:
		if n, err := strconv.Atoi(v); err == nil {
			return n
		}
		for _, cp := range c.Ports {
			if cp.Name == v {
				return cp.ContainerPort
			}
		}
		t.Fatalf("port %q names no container port", v)
	}
	t.Fatalf("port %v (%T): want a number or a port name", p, p)
	return 0
}

// TestProbesAndPortsAgreeWithTheConfig: probes, Service, scrape annotation
// and container port all point at server.listen's port, on paths the
// gateway serves; the listen address is reachable from outside the pod.
func TestProbesAndPortsAgreeWithTheConfig(t *testing.T) {
	s := load(t)
	cfg, _ := s.parsedConfig(t)
	host, portStr, err := net.SplitHostPort(cfg.Server.Listen)
	if err != nil {
		t.Fatal(err)
	}
	port, _ := strconv.Atoi(portStr)
	if ip := net.ParseIP(host); host == "localhost" || (ip != nil && ip.IsLoopback()) {
		t.Fatalf("server.listen %s is loopback: kubelet's probes and the Service could not reach it", cfg.Server.Listen)
	}
	c := s.gateway(t)
	found := false
	for _, cp := range c.Ports {
		found = found || cp.ContainerPort == port
	}
	if !found {
		t.Errorf("no containerPort %d (server.listen) in %+v", port, c.Ports)
	}
	for name, pr := range map[string]struct {
		p    *probe
		path string
	}{"readinessProbe": {c.ReadinessProbe, "/readyz"}, "livenessProbe": {c.LivenessProbe, "/healthz"}} {
		if pr.p == nil || pr.p.HTTPGet == nil {
			t.Errorf("%s: want an httpGet probe on %s", name, pr.path)
			continue
		}
		if pr.p.HTTPGet.Path != pr.path {
			t.Errorf("%s path %q, want %s", name, pr.p.HTTPGet.Path, pr.path)
		}
		if got := portOf(t, c, pr.p.HTTPGet.Port); got != port {
			t.Errorf("%s port %d, server.listen port %d", name, got, port)
		}
	}
	for _, sp := range s.service.Spec.Ports {
		if got := portOf(t, c, sp.TargetPort); got != port {
			t.Errorf("Service port %d targets %d, server.listen port %d", sp.Port, got, port)
		}
	}
	a := s.deployment.Spec.Template.Metadata.Annotations
	if a["prometheus.io/scrape"] != "true" || a["prometheus.io/path"] != "/metrics" || a["prometheus.io/port"] != portStr {
		t.Errorf("scrape annotations %v: want scrape true, path /metrics, port %s", a, portStr)
	}
	// Every selector picks the pods.
	pods := s.deployment.Spec.Template.Metadata.Labels
	matches := func(sel map[string]string) bool {
		for k, v := range sel {
			if pods[k] != v {
				return false
			}
		}
		return len(sel) > 0
	}
	for what, sel := range map[string]map[string]string{
		"Deployment selector": s.deployment.Spec.Selector.MatchLabels,
		"Service selector":    s.service.Spec.Selector,
		"PDB selector":        s.pdb.Spec.Selector.MatchLabels,
	} {
		if !matches(sel) {
			t.Errorf("%s %v does not match the pod labels %v", what, sel, pods)
		}
	}
}

// TestGracePeriodCoversTheDrain: kubelet kills the container
// terminationGracePeriodSeconds after SIGTERM; the gateway needs
// drain_delay + shutdown_timeout for a full drain, and the delay must
// outlast the readiness probe's time to notice.
func TestGracePeriodCoversTheDrain(t *testing.T) {
	const margin = 5 * time.Second
	s := load(t)
	cfg, _ := s.parsedConfig(t)
	grace := time.Duration(s.deployment.Spec.Template.Spec.TerminationGracePeriodSeconds) * time.Second
	need := cfg.Server.DrainDelay + cfg.Server.ShutdownTimeout + margin
	if grace < need {
		t.Errorf("terminationGracePeriodSeconds %v < drain_delay %v + shutdown_timeout %v + %v margin",
			grace, cfg.Server.DrainDelay, cfg.Server.ShutdownTimeout, margin)
	}
	if cfg.Server.DrainDelay <= 0 {
		t.Errorf("server.drain_delay is 0: the listener would close before endpoints stop sending")
	}
	rp := s.gateway(t).ReadinessProbe
	if rp != nil {
		period, fails := max(rp.PeriodSeconds, 1), max(rp.FailureThreshold, 1)
		if notice := time.Duration(period*fails) * time.Second; cfg.Server.DrainDelay < notice {
			t.Errorf("drain_delay %v is shorter than the readiness probe's %v to notice", cfg.Server.DrainDelay, notice)
		}
	}
}

// TestPodHardening: replicated, non-root (matching the image's USER),
// read-only root, no privilege escalation, resources set, autoscaled on
// CPU with at least two replicas, disruptions bounded.
func TestPodHardening(t *testing.T) {
	s := load(t)
	d := s.deployment.Spec
	if d.Replicas < 2 {
		t.Errorf("replicas %d, want at least 2", d.Replicas)
	}
	pod, c := d.Template.Spec.SecurityContext, s.gateway(t)
	isTrue := func(b ...*bool) bool {
		for _, v := range b {
			if v != nil {
				return *v
			}
		}
		return false
	}
	if !isTrue(c.SecurityContext.RunAsNonRoot, pod.RunAsNonRoot) {
		t.Error("runAsNonRoot is not true")
	}
	if !isTrue(c.SecurityContext.ReadOnlyRootFilesystem) {
		t.Error("readOnlyRootFilesystem is not true")
	}
	if c.SecurityContext.AllowPrivilegeEscalation == nil || *c.SecurityContext.AllowPrivilegeEscalation {
		t.Error("allowPrivilegeEscalation is not false")
	}
	for _, r := range []string{"cpu", "memory"} {
		if c.Resources.Requests[r] == "" || c.Resources.Limits[r] == "" {
			t.Errorf("resources: %s request and limit are required", r)
		}
	}
	// The pod's runAsUser is the image's USER (a numeric one, so that
	// runAsNonRoot can be checked by kubelet).
	df, err := os.ReadFile(filepath.Join("..", "..", "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	user := regexp.MustCompile(`(?m)^USER\s+(\d+)`).FindSubmatch(df)
	if user == nil || string(user[1]) == "0" {
		t.Fatalf("Dockerfile: want a numeric non-root USER; got %q", user)
	}
	if pod.RunAsUser == nil || fmt.Sprint(*pod.RunAsUser) != string(user[1]) {
		t.Errorf("pod runAsUser %v, Dockerfile USER %s", pod.RunAsUser, user[1])
	}
	if !bytes.Contains(df, []byte("-X github.com/switchyard/switchyard/cli.Version=")) {
		t.Error("Dockerfile does not stamp cli.Version")
	}

	h := s.hpa.Spec
	if h.ScaleTargetRef.Kind != "Deployment" || h.ScaleTargetRef.Name != s.files["deployment.yaml"].Metadata.Name {
		t.Errorf("HPA scales %s/%s, not the Deployment", h.ScaleTargetRef.Kind, h.ScaleTargetRef.Name)
	}
	if h.MinReplicas < 2 || h.MaxReplicas < h.MinReplicas {
		t.Errorf("HPA replicas %d..%d, want min >= 2", h.MinReplicas, h.MaxReplicas)
	}
	cpu := false
	for _, m := range h.Metrics {
		cpu = cpu || (m.Type == "Resource" && m.Resource.Name == "cpu")
	}
	if !cpu {
		t.Error("HPA does not scale on CPU")
	}
	if s.pdb.Spec.MaxUnavailable == nil && s.pdb.Spec.MinAvailable == nil {
		t.Error("PDB sets neither maxUnavailable nor minAvailable")
	}
}

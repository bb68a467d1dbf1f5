package kubernetes

import (
	"os"
	"strings"
	"testing"

	"github.com/switchyard/switchyard/config"
)

// TestRedisComponent: the redis/ component is a kustomize Component that
// creates the Valkey it points REDIS_URL at, and the ConfigMap's config
// loads with its environment as a Redis-backed quota store (and, without
// it, as the memory store).
func TestRedisComponent(t *testing.T) {
	var k struct {
		Kind      string   `yaml:"kind"`
		Resources []string `yaml:"resources"`
		Patches   []struct {
			Path string `yaml:"path"`
		} `yaml:"patches"`
	}
	b, err := os.ReadFile("redis/kustomization.yaml")
	if err != nil {
		t.Fatal(err)
	}
	decode(t, "redis/kustomization.yaml", b, &k)
	if k.Kind != "Component" || len(k.Resources) != 1 || k.Resources[0] != "valkey.yaml" || len(k.Patches) != 1 {
		t.Fatalf("redis/kustomization.yaml: %+v", k)
	}
	var patch struct {
		Spec struct {
			Template struct {
				Spec struct {
					Containers []container `yaml:"containers"`
				} `yaml:"spec"`
			} `yaml:"template"`
		} `yaml:"spec"`
	}
	b, _ = os.ReadFile("redis/" + k.Patches[0].Path)
	decode(t, k.Patches[0].Path, b, &patch)
	env := map[string]string{}
	for _, e := range patch.Spec.Template.Spec.Containers[0].Env {
		env[e.Name] = e.Value
	}
	valkey, _ := os.ReadFile("redis/valkey.yaml")
	if env["QUOTA_STORE"] != "redis" || !strings.HasPrefix(env["REDIS_URL"], "redis://switchyard-valkey:6379") ||
		!strings.Contains(string(valkey), "name: switchyard-valkey") {
		t.Fatalf("the component's env %v does not point at its Valkey", env)
	}
	s := load(t)
	_, raw := s.parsedConfig(t)
	lookup := func(m map[string]string) func(string) (string, bool) {
		return func(k string) (string, bool) {
			if v, ok := m[k]; ok {
				return v, true
			}
			if strings.HasSuffix(k, "_API_KEY") {
				return "dummy", true // provider keys from the Secret
			}
			return "", false
		}
	}
	cfg, err := config.Parse("config.yaml", []byte(raw), lookup(env))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Quotas.Store != config.StoreRedis || cfg.Quotas.Redis.URL != env["REDIS_URL"] {
		t.Fatalf("with the component: quotas %+v", cfg.Quotas)
	}
	cfg, err = config.Parse("config.yaml", []byte(raw), func(k string) (string, bool) {
		if strings.HasSuffix(k, "_API_KEY") {
			return "dummy", true
		}
		return "", false
	})
	if err != nil || cfg.Quotas.Store != config.StoreMemory {
		t.Fatalf("without the component: %v %+v", err, cfg)
	}
}

package telemetry

import (
	"net"
	"strings"
	"testing"
	"time"

	"github.com/switchyard/switchyard/config"
	"github.com/switchyard/switchyard/upstream"
)

// A target whose OAuth token fetches fail reports them by target in
// switchyard_upstream_token_failures_total; a target with an API key has
// no such series; neither the client secret nor anything of the token
// endpoint reaches /metrics.
func TestMetricsTokenFailuresByTarget(t *testing.T) {
	// A token endpoint that refuses: a listener closed at once.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	authority := "http://" + ln.Addr().String()
	ln.Close()
	p := upstream.NewPool()
	entra, err := p.Target(&config.Target{
		VirtualKey: "entra", Provider: config.ProviderAzure, BaseURL: "http://127.0.0.1:1/openai/v1",
		Cloud: config.Cloud{AzureClientID: "client-id-1", AzureClientSecret: "client-secret-value",
			AzureTenantID: "tenant-1", AzureAuthority: authority},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer entra.Endpoint.Token.Stop()
	keyed := newTarget(t, p, "keyed", 2)
	m := quietMetrics()
	m.SetTargets([]*upstream.Target{entra, keyed})

	var got map[string]float64
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		got = switchyardSeries(t, scrape(t, m))
		if got[key(famTokenFail, "target", "entra")] >= 1 || time.Now().After(deadline) {
			break
		}
	}
	if n := got[key(famTokenFail, "target", "entra")]; n < 1 {
		t.Fatalf("entra: %v token failures, want at least 1", n)
	}
	if _, ok := got[key(famTokenFail, "target", "keyed")]; ok {
		t.Error("a target without a token source has a token failure series")
	}
	text := string(scrape(t, m))
	for _, secret := range []string{"client-secret-value", "client-id-1", "tenant-1", ln.Addr().String()} {
		if strings.Contains(text, secret) {
			t.Errorf("/metrics shows %q", secret)
		}
	}
}

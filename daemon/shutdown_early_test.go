package daemon

import (
	"context"
	"io"
	"path/filepath"
	"testing"
	"time"
)

// A Shutdown that comes before Serve has handed its listener to the server
// (a SIGTERM at start, or a test that ends at once) still ends Serve: the
// server only closes listeners it registered, so Serve used to block in
// Accept for ever. Both orders are tried: Shutdown fully before Serve, and
// Serve started at the same moment as Shutdown.
func TestShutdownBeforeServeEndsServe(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gw.yaml")
	writeFile(t, path, `
strategy:
  mode: conditional
  conditions:
    - {key: model, value: m, target_key: a}
targets:
  - {virtual_key: a, provider: openai, base_url: "http://127.0.0.1:1/v1", api_key: k}
`)
	for _, concurrent := range []bool{false, true} {
		for range 20 {
			d, err := New(path, "127.0.0.1:0", io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			ln, err := d.Listen()
			if err != nil {
				t.Fatal(err)
			}
			served := make(chan error, 1)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			if concurrent {
				go func() { served <- d.Serve(ln) }()
				_ = d.Shutdown(ctx)
			} else {
				_ = d.Shutdown(ctx)
				go func() { served <- d.Serve(ln) }()
			}
			select {
			case <-served:
			case <-time.After(10 * time.Second):
				cancel()
				t.Fatalf("Serve still running 10 s after Shutdown (concurrent=%v)", concurrent)
			}
			cancel()
		}
	}
}

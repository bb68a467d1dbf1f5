package main

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// The -pprof listener serves net/http/pprof's index and its endpoints.
func TestPprofMux(t *testing.T) {
	mux := pprofMux()
	for path, want := range map[string]string{
		"/debug/pprof/":        "profile",
		"/debug/pprof/cmdline": "bareproxy",
	} {
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), want) {
			t.Errorf("GET %s: %d %q", path, rec.Code, truncated(rec.Body.String()))
		}
	}
	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusNotFound {
		t.Errorf("GET /metrics on the pprof mux: %d", rec.Code)
	}
}

func truncated(s string) string {
	if len(s) > 200 {
		return s[:200]
	}
	return s
}

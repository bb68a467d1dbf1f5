package telemetry

import (
	"bytes"
	"testing"
)

// The access line names the client key that authenticated the request,
// and has no key field without auth.
func TestAccessLogKeyName(t *testing.T) {
	var buf bytes.Buffer
	a := NewAccessLog(jsonLogger(t, "info", &buf))
	a.Log(&Entry{RequestID: []byte("r1"), Status: 200, Key: "acme"})
	a.Log(&Entry{RequestID: []byte("r2"), Status: 200})
	lines := decodeLines(t, &buf)
	if len(lines) != 2 || lines[0]["key"] != "acme" {
		t.Fatalf("lines %v; want key acme on the first", lines)
	}
	if _, ok := lines[1]["key"]; ok {
		t.Errorf("key field without auth: %v", lines[1])
	}
}

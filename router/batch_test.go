package router

import (
	"strings"
	"testing"
)

// TestServesBatch: a target takes in a batch only surfaces it serves;
// Compile refuses a spec that says otherwise, so no batch can reach a
// target the residency proof did not see for that surface.
func TestServesBatch(t *testing.T) {
	chat, msgs := SurfaceSet(1<<SurfaceChat), SurfaceSet(1<<SurfaceMessages)
	s, err := Compile(nil, []TargetSpec{{Name: "a", Surfaces: chat | msgs, Batch: msgs}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !s.ServesBatch(0, SurfaceMessages) || s.ServesBatch(0, SurfaceChat) || s.ServesBatch(1, SurfaceMessages) || s.ServesBatch(-1, SurfaceChat) {
		t.Fatal("ServesBatch does not follow TargetSpec.Batch")
	}
	if _, err := Compile(nil, []TargetSpec{{Name: "a", Surfaces: chat, Batch: msgs}}, 0); err == nil ||
		!strings.Contains(err.Error(), "does not serve") {
		t.Fatalf("Compile of a batch surface the target does not serve: %v", err)
	}
}

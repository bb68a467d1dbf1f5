package main

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strings"
	"testing"

	"github.com/switchyard/switchyard/bench/harness"
)

var allocSink [][]byte

//go:noinline
func allocateForProfile(n int) {
	for range n {
		allocSink = append(allocSink, make([]byte, 96))
	}
}

// TestAllocWindowWithPprof takes the allocation window the way profile
// does (two heap snapshots, each after a GC, diffed with -base, every
// allocation recorded) around a known number of allocations, and reads it
// back with the real `go tool pprof` and ParsePprofTop: the count must be
// exact, and the Switchyard focus must see them.
func TestAllocWindowWithPprof(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go tool pprof")
	}
	old := runtime.MemProfileRate
	runtime.MemProfileRate = 1
	defer func() { runtime.MemProfileRate = old }()
	dir := t.TempDir()
	snapshot := func(name string) string {
		t.Helper()
		runtime.GC() // as /debug/pprof/heap?gc=1: publishes every record so far
		path := filepath.Join(dir, name)
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		return path
	}
	allocateForProfile(100) // before the window: must not count
	h0 := snapshot("heap-0.pb.gz")
	allocSink = make([][]byte, 0, 2000) // outside allocateForProfile
	allocateForProfile(1000)
	h1 := snapshot("heap-1.pb.gz")
	allocateForProfile(100) // after the window: must not count

	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	base := []string{"-sample_index=alloc_objects", "-top", "-nodefraction=0", "-base", h0}
	text, err := pprofText(ctx, root, append(base, "-focus=allocateForProfile", h1)...)
	if err != nil {
		t.Fatal(err)
	}
	mine, err := harness.ParsePprofTop(text)
	if err != nil {
		t.Fatal(err)
	}
	if mine.Shown != 1000 {
		t.Fatalf("window shows %v allocations in allocateForProfile, want 1000:\n%s", mine.Shown, text)
	}
	if text, err = pprofText(ctx, root, append(base, "-focus="+harness.SwitchyardFocus, h1)...); err != nil {
		t.Fatal(err)
	}
	ours, err := harness.ParsePprofTop(text)
	if err != nil {
		t.Fatal(err)
	}
	// This test's own frames are Switchyard's; the window also holds the
	// first snapshot's writing and the slice above.
	if ours.Shown < 1001 || ours.Shown > ours.Total {
		t.Fatalf("Switchyard focus shows %v of %v:\n%s", ours.Shown, ours.Total, text)
	}
	if text, err = pprofText(ctx, root, append(base, h1)...); err != nil {
		t.Fatal(err)
	}
	all, err := harness.ParsePprofTop(text)
	if err != nil {
		t.Fatal(err)
	}
	if all.Total < ours.Shown {
		t.Fatalf("all allocations %v < Switchyard's %v", all.Total, ours.Shown)
	}
	if _, err := pprofText(ctx, root, "-top", filepath.Join(dir, "missing.pb.gz")); err == nil {
		t.Fatal("missing profile not an error")
	}
}

func TestProfileCommandsAndHeader(t *testing.T) {
	c := profileCommands(8, 4)
	for _, want := range []string{
		"go build -tags pprof -o /tmp/switchyard-pprof .",
		"SWITCHYARD_PPROF_LISTEN=127.0.0.1:6060 GOMAXPROCS=1 taskset -c 0 /tmp/switchyard-pprof serve -config /tmp/bench.yaml &",
		"-c 64 -d 12s &",
		"'http://127.0.0.1:6060/debug/pprof/profile?seconds=8'",
		"GODEBUG=memprofilerate=1 ",
		"sleep 4; curl -s -o heap-1.pb.gz",
		`-focus='^github\.com/switchyard/' -base heap-0.pb.gz /tmp/switchyard-pprof heap-1.pb.gz`,
	} {
		if !strings.Contains(c, want) {
			t.Errorf("commands lack %q:\n%s", want, c)
		}
	}
	got := stripPprofHeader("File: x\nBuild ID: 1\nType: alloc_objects\nTime: now\nShowing nodes accounting for 3, 100% of 3 total\n")
	if got != "Type: alloc_objects\nShowing nodes accounting for 3, 100% of 3 total\n" {
		t.Errorf("stripped header: %q", got)
	}
}

package tracing

import (
	"context"
	"testing"
	"time"

	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/switchyard/switchyard/router"
	"github.com/switchyard/switchyard/telemetry"
)

const (
	parentTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
	parentSpan  = "00f067aa0ba902b7"
)

// sample_ratio samples requests without a parent; a sampled traceparent
// is followed whatever the ratio, an unsampled one is not traced.
func TestSampling(t *testing.T) {
	for _, tc := range []struct {
		ratio  float64
		parent string
		want   int
	}{
		{0, "", 0},
		{1, "", 1},
		{0, "00-" + parentTrace + "-" + parentSpan + "-01", 1},
		{1, "00-" + parentTrace + "-" + parentSpan + "-00", 0},
	} {
		exp := tracetest.NewInMemoryExporter()
		tr := NewWithExporter(exp, tc.ratio, "test")
		var parent []byte
		if tc.parent != "" {
			parent = []byte(tc.parent)
		}
		sp := tr.Start(time.Now(), router.SurfaceChat, []byte("gpt-4o"), parent, nil)
		if sp.Recording() != (tc.want == 1) {
			t.Errorf("ratio %v parent %q: recording %v", tc.ratio, tc.parent, sp.Recording())
		}
		if sp.Recording() {
			if tp := string(sp.AppendTraceparent(nil)); len(tp) != 55 || (tc.parent != "" && tp[3:35] != parentTrace) {
				t.Errorf("forwarded traceparent %q", tp)
			}
		}
		var e = entryOK()
		sp.End(&e, time.Now())
		_ = tr.ForceFlush(context.Background()) // Shutdown would empty the in-memory exporter
		if got := len(exp.GetSpans()); got != tc.want {
			t.Errorf("ratio %v parent %q: %d spans, want %d", tc.ratio, tc.parent, got, tc.want)
		}
		_ = tr.Shutdown(context.Background())
	}
}

// A nil Tracer is tracing off; its methods are safe.
func TestNilTracer(t *testing.T) {
	var tr *Tracer
	if err := tr.Shutdown(context.Background()); err != nil {
		t.Error(err)
	}
	var sp Span
	e := entryOK()
	sp.Skip(nil, 0)
	sp.End(&e, time.Now())
	if sp.Recording() || sp.AppendTraceparent(nil) != nil {
		t.Error("the zero Span records")
	}
}

// A malformed traceparent is no parent.
func TestParentContext(t *testing.T) {
	for _, bad := range []string{"", "00-xyz", "00-" + parentTrace + "-" + parentSpan, "00-" + parentTrace + "-zz" + parentSpan[2:] + "-01",
		"00-00000000000000000000000000000000-" + parentSpan + "-01"} {
		if _, ok := parentContext([]byte(bad), nil); ok {
			t.Errorf("%q parsed as a parent", bad)
		}
	}
	sc, ok := parentContext([]byte("00-"+parentTrace+"-"+parentSpan+"-01"), []byte("vendor=x"))
	if !ok || sc.TraceID().String() != parentTrace || sc.SpanID().String() != parentSpan || !sc.IsSampled() || sc.TraceState().Get("vendor") != "x" {
		t.Errorf("parent %v %v", sc, ok)
	}
}

func entryOK() telemetry.Entry {
	return telemetry.Entry{RequestID: []byte("r1"), Surface: router.SurfaceChat, Model: []byte("gpt-4o"), Status: 200, Key: "acme", Target: "alpha"}
}

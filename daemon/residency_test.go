package daemon

import (
	"bytes"
	"strings"
	"testing"

	"github.com/rs/zerolog"
	"github.com/valyala/fasthttp"

	"github.com/switchyard/switchyard/telemetry"
)

func TestLogFencedLogsAndCounts(t *testing.T) {
	var buf bytes.Buffer
	m := telemetry.NewMetrics()
	logFenced(zerolog.New(&buf), m, "eu-key", "us")
	if s := buf.String(); !strings.Contains(s, `"level":"error"`) || !strings.Contains(s, `"key":"eu-key"`) || !strings.Contains(s, `"target":"us"`) {
		t.Errorf("log line %q", s)
	}
	var rc fasthttp.RequestCtx
	m.Handler(&rc)
	body := string(rc.Response.Body())
	for _, s := range []string{`switchyard_residency_guard_blocks_total{key="eu-key",target="us"} 1`, "# HELP switchyard_residency_guard_blocks_total Walks"} {
		if !strings.Contains(body, s) {
			t.Errorf("/metrics lacks %q", s)
		}
	}
}

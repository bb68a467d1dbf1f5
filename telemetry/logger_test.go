package telemetry

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

func TestNewLoggerLevels(t *testing.T) {
	for _, c := range []struct {
		level string
		want  []string // messages that pass, of debug, info, warn, error
	}{
		{"debug", []string{"d", "i", "w", "e"}},
		{"info", []string{"i", "w", "e"}},
		{"", []string{"i", "w", "e"}}, // default
		{"warn", []string{"w", "e"}},
		{"error", []string{"e"}},
	} {
		var buf bytes.Buffer
		l, err := NewLogger(c.level, "json", &buf)
		if err != nil {
			t.Fatalf("level %q: %v", c.level, err)
		}
		l.Debug().Msg("d")
		l.Info().Msg("i")
		l.Warn().Msg("w")
		l.Error().Msg("e")
		var got []string
		for _, ln := range decodeLines(t, &buf) {
			got = append(got, ln["message"].(string))
			ts, _ := ln["time"].(string)
			if _, err := time.Parse(time.RFC3339, ts); err != nil {
				t.Errorf("level %q: time %q is not RFC 3339", c.level, ts)
			}
		}
		if strings.Join(got, ",") != strings.Join(c.want, ",") {
			t.Errorf("level %q: logged %v, want %v", c.level, got, c.want)
		}
	}
}

func TestNewLoggerFormats(t *testing.T) {
	var js, con bytes.Buffer
	lj, err := NewLogger("info", "", &js) // "" = json
	if err != nil {
		t.Fatal(err)
	}
	lj.Info().Str("k", "v").Msg("hello")
	if ln := decodeLines(t, &js); len(ln) != 1 || ln[0]["k"] != "v" || ln[0]["level"] != "info" {
		t.Errorf("json line: %v", ln)
	}

	lc, err := NewLogger("info", "console", &con)
	if err != nil {
		t.Fatal(err)
	}
	lc.Warn().Str("k", "v").Msg("hello")
	out := con.String()
	if !strings.Contains(out, "WRN") || !strings.Contains(out, "hello") || !strings.Contains(out, "k=v") {
		t.Errorf("console line: %q", out)
	}
	if strings.Contains(out, "\x1b[") {
		t.Errorf("console line has colour codes: %q", out)
	}
}

func TestNewLoggerRejectsUnknownValues(t *testing.T) {
	for _, c := range []struct{ level, format, want string }{
		{"verbose", "json", `log.level: "verbose" is not a log level; want debug, info, warn or error`},
		{"INFO", "json", `log.level: "INFO" is not a log level`},
		{"trace", "json", `log.level: "trace"`},
		{"info", "text", `log.format: "text" is not a log format; want json or console`},
		{"info", "JSON", `log.format: "JSON"`},
	} {
		var buf bytes.Buffer
		l, err := NewLogger(c.level, c.format, &buf)
		if err == nil {
			t.Errorf("NewLogger(%q, %q) accepted", c.level, c.format)
			continue
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("NewLogger(%q, %q) error %q, want it to contain %q", c.level, c.format, err, c.want)
		}
		l.Error().Msg("x") // the returned logger is a no-op, not a nil-pointer trap
		if buf.Len() != 0 {
			t.Errorf("logger returned with an error wrote %q", buf.String())
		}
	}
}

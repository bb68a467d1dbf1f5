package telemetry

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/rs/zerolog"
)

// Log levels and formats accepted by NewLogger (config log.level and
// log.format, docs/configuration.md, Configuration reference).
var (
	logLevels = map[string]zerolog.Level{
		"debug": zerolog.DebugLevel,
		"info":  zerolog.InfoLevel,
		"warn":  zerolog.WarnLevel,
		"error": zerolog.ErrorLevel,
	}
)

// NewLogger builds the process logger from config log.level (debug, info,
// warn or error; "" = info) and log.format (json or console; "" = json),
// writing to w (nil = os.Stderr). json writes one JSON object a line with
// "level", "time" (RFC 3339) and "message"; console writes the same events
// human-readable, without colour. It changes no zerolog global. Any other
// level or format is an error naming the accepted values. When w is a
// *LogWriter, the line it adds about dropped lines takes the same format.
func NewLogger(level, format string, w io.Writer) (zerolog.Logger, error) {
	if level == "" {
		level = "info"
	}
	lvl, ok := logLevels[level]
	if !ok {
		return zerolog.Nop(), fmt.Errorf("log.level: %q is not a log level; want debug, info, warn or error", level)
	}
	if w == nil {
		w = os.Stderr
	}
	out := w
	switch format {
	case "", "json":
	case "console":
		w = consoleWriter(w)
	default:
		return zerolog.Nop(), fmt.Errorf("log.format: %q is not a log format; want json or console", format)
	}
	if lw, ok := out.(*LogWriter); ok {
		lw.setFormat(format) // its own note about dropped lines, in the same format
	}
	return zerolog.New(w).Level(lvl).With().Timestamp().Logger(), nil
}

// consoleWriter is log.format console's writer to w: human-readable, no
// colour, RFC 3339 times.
func consoleWriter(w io.Writer) io.Writer {
	return zerolog.ConsoleWriter{Out: w, NoColor: true, TimeFormat: time.RFC3339}
}

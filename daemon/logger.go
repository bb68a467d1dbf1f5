package daemon

import (
	"fmt"
	"io"
	"time"

	"github.com/rs/zerolog"
)

// bootLogger is the logger used before a configuration is loaded: JSON at
// info level with timestamps.
func bootLogger(w io.Writer) zerolog.Logger {
	return zerolog.New(w).Level(zerolog.InfoLevel).With().Timestamp().Logger()
}

// newLogger builds the process logger from the config's log block: level
// debug|info|warn|error, format json|console.
func newLogger(level, format string, w io.Writer) (zerolog.Logger, error) {
	lvl, err := zerolog.ParseLevel(level)
	if err != nil || level == "" {
		return zerolog.Logger{}, fmt.Errorf("log.level %q: want debug, info, warn or error", level)
	}
	switch format {
	case "json":
	case "console":
		w = zerolog.ConsoleWriter{Out: w, TimeFormat: time.RFC3339, NoColor: true}
	default:
		return zerolog.Logger{}, fmt.Errorf("log.format %q: want json or console", format)
	}
	return zerolog.New(w).Level(lvl).With().Timestamp().Logger(), nil
}

// fasthttpLogger sends fasthttp's connection-level error lines to zerolog.
// The server sets SecureErrorLogMessage, so the lines quote no request bytes.
type fasthttpLogger struct{ log zerolog.Logger }

// Printf implements fasthttp.Logger.
func (l fasthttpLogger) Printf(format string, args ...any) {
	l.log.Warn().Msg(fmt.Sprintf(format, args...))
}

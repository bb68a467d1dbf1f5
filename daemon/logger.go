package daemon

import (
	"fmt"
	"io"

	"github.com/rs/zerolog"
)

// bootLogger is the logger used before a configuration is loaded: JSON at
// info level with timestamps.
func bootLogger(w io.Writer) zerolog.Logger {
	return zerolog.New(w).Level(zerolog.InfoLevel).With().Timestamp().Logger()
}

// fasthttpLogger sends fasthttp's connection-level error lines to zerolog.
// The server sets SecureErrorLogMessage, so the lines quote no request bytes.
type fasthttpLogger struct{ log zerolog.Logger }

// Printf implements fasthttp.Logger.
func (l fasthttpLogger) Printf(format string, args ...any) {
	l.log.Warn().Msg(fmt.Sprintf(format, args...))
}

package daemon

import (
	"fmt"
	"io"
	"strings"

	"github.com/rs/zerolog"
)

// bootLogger is the logger used before a configuration is loaded: JSON at
// info level with timestamps.
func bootLogger(w io.Writer) zerolog.Logger {
	return zerolog.New(w).Level(zerolog.InfoLevel).With().Timestamp().Logger()
}

// fasthttpLogger sends fasthttp's own log lines to zerolog. The server
// sets SecureErrorLogMessage, so the lines quote no request bytes.
//
// "error when serving connection" lines are logged at debug: fasthttp
// writes one for each request it refused while reading it (a body over
// max_request_bytes, a malformed request), after the ErrorHandler already
// answered the client. They are the client's errors, so at warn any client
// could flood the operator's log. Other lines (accept failures, connection
// limits) are the server's and stay at warn.
type fasthttpLogger struct{ log zerolog.Logger }

// Printf implements fasthttp.Logger.
func (l fasthttpLogger) Printf(format string, args ...any) {
	ev := l.log.Warn()
	if strings.HasPrefix(format, "error when serving connection") {
		ev = l.log.Debug()
	}
	ev.Msg(fmt.Sprintf(format, args...))
}

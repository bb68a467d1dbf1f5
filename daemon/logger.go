package daemon

import (
	"fmt"
	"io"
	"net"
	"strings"

	"github.com/rs/zerolog"

	"github.com/switchyard/switchyard/hotpath"
)

// bootLogger is the logger used before a configuration is loaded: JSON at
// info level with timestamps.
func bootLogger(w io.Writer) zerolog.Logger {
	return zerolog.New(w).Level(zerolog.InfoLevel).With().Timestamp().Logger()
}

// fasthttpLogger sends fasthttp's own log lines to zerolog.
//
// "error when serving connection" lines (one per request fasthttp refused
// while reading it, after the ErrorHandler answered) are the client's
// errors: logged at debug, so no client can flood the log, and with the
// error's class only (hotpath.ClassifyReadError), never its text, which
// quotes the offending request bytes (a client's key among them) whatever
// SecureErrorLogMessage says. Other lines (accept failures, connection
// limits) are the server's and stay at warn.
type fasthttpLogger struct{ log zerolog.Logger }

// Printf implements fasthttp.Logger.
func (l fasthttpLogger) Printf(format string, args ...any) {
	if strings.HasPrefix(format, "error when serving connection") {
		ev := l.log.Debug()
		if !ev.Enabled() {
			return
		}
		// The arguments are the local address, the remote one and the error.
		names := [...]string{"local", "remote"}
		var err error
		nAddr := 0
		for _, a := range args {
			switch v := a.(type) {
			case error:
				err = v
			case net.Addr:
				if nAddr < len(names) && v != nil {
					ev = ev.Str(names[nAddr], v.String())
				}
				nAddr++
			}
		}
		ev.Str("class", hotpath.ClassifyReadError(err).String()).Msg("error when serving connection")
		return
	}
	l.log.Warn().Msg(fmt.Sprintf(format, args...))
}

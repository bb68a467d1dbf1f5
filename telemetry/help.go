package telemetry

import (
	"bytes"
	"io"
)

// familyHelp is the # HELP text of each switchyard_* family (METRICS.md
// says more).
var familyHelp = map[string]string{
	famRequests:    "API requests answered, by surface and HTTP status.",
	famKeyRequests: "API requests answered, by client key name (empty without auth) and HTTP status.",
	famTokens:      "Tokens reported in the usage of successful answers, by target, client key name (empty without auth) and kind (input: uncached input, cache_read, cache_write, output).",
	famAttempts:    "Upstream calls made, by target and outcome.",
	famDuration:    "Duration of each upstream call in seconds (for a stream: until its first event), by target.",
	famFailovers:   "Times the walk left a target for the next chain member, by target and the failure's class.",
	famSkips:       "Chain members passed over without a call, by target and reason.",
	famStreams:     "Committed streams that ended, by target and outcome.",
	famParks:       "429 answers, each of which parks the target.",
	famCircuit:     "Circuit breaker state by target: 0 closed, 1 half-open, 2 open.",
	famParked:      "1 while the target is parked after a 429, else 0.",
	famQueue:       "Requests waiting for a concurrency slot of the target.",
	famInflight:    "Concurrency slots of the target taken (a stream holds one until it ends).",
	famReloads:     "Configuration reload attempts by result (success, failure, unchanged).",
	famReloadOK:    "1 if the last configuration load or reload succeeded, 0 if it failed.",
	famReloadTS:    "Unix time of the last configuration load or reload attempt.",
	famInfo:        "Always 1; hash is the first 12 hex digits of the serving configuration's SHA-256.",
	famPanics:      "Panics recovered while serving a request (a gateway bug).",
	famDiscards:    "Pooled upstream connections dropped before reuse, nothing written to them.",
	famTokenFail:   "Failed OAuth access token fetches of the target's credentials (azure with Entra ID, vertex).",
	famBatchCalls:  "Batch API calls (files, batches, message_batches) answered, by client key name, target and operation (api.op).",
	famBatchOwned:  "File and batch ids each client key owns, by kind (file, batch, message_batch), as the tenancy store counts them.",
	famLogDropped:  "Log lines dropped because the log output (stderr) did not take them fast enough.",
}

// otherHelp is the # HELP text of the process and Go runtime families,
// which the metrics library writes without one.
const otherHelp = "Process or Go runtime metric of the VictoriaMetrics/metrics client."

// appendMetadata appends the # HELP and # TYPE lines of family.
func appendMetadata(b []byte, family, typ string) []byte {
	b = append(b, "# HELP "...)
	b = append(b, family...)
	b = append(b, ' ')
	b = append(b, familyHelp[family]...)
	b = append(b, "\n# TYPE "...)
	b = append(b, family...)
	b = append(b, ' ')
	b = append(b, typ...)
	return append(b, '\n')
}

var helpPrefix = []byte("# HELP ")

// writeWithHelp writes text (an exposition whose # HELP lines the metrics
// library left without a text) to w with each empty HELP line given its
// family's text.
func writeWithHelp(w io.Writer, text []byte) {
	out := make([]byte, 0, len(text)+len(text)/8)
	for len(text) > 0 {
		n := bytes.IndexByte(text, '\n') + 1
		if n == 0 {
			n = len(text)
		}
		line := text[:n]
		text = text[n:]
		name, ok := bytes.CutPrefix(bytes.TrimSuffix(line, []byte("\n")), helpPrefix)
		if !ok || bytes.IndexByte(name, ' ') >= 0 {
			out = append(out, line...)
			continue
		}
		out = append(out, helpPrefix...)
		out = append(out, name...)
		out = append(out, ' ')
		if h, known := familyHelp[string(name)]; known {
			out = append(out, h...)
		} else {
			out = append(out, otherHelp...)
		}
		out = append(out, '\n')
	}
	_, _ = w.Write(out)
}

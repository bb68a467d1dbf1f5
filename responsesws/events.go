package responsesws

import (
	"crypto/rand"
	"encoding/hex"
	"strconv"
	"time"

	"github.com/switchyard/switchyard/internal/jsonw"
)

// The events the socket writes itself: error events for refusals, and the
// two events that answer a warm-up.

// appendError appends the error event for r: the shape OpenAI's socket
// uses and Codex reads, {"type":"error","status":…,"error":{"type","code",
// "message","param"}}, with "headers" carrying Retry-After and the
// x-ratelimit-* headers the HTTP answer had. obj, when not nil, is the
// OpenAI error object of the HTTP answer's body, relayed as written in
// place of one made from r.
func appendError(dst []byte, r *refusal, obj []byte) []byte {
	dst = append(dst, `{"type":"error","status":`...)
	dst = strconv.AppendInt(dst, int64(r.status), 10)
	dst = append(dst, `,"error":`...)
	if obj != nil {
		dst = append(dst, obj...)
	} else {
		dst = append(dst, `{"type":`...)
		dst = jsonw.String(dst, r.typ)
		dst = append(dst, `,"code":`...)
		dst = jsonw.String(dst, r.code)
		dst = append(dst, `,"message":`...)
		dst = jsonw.String(dst, r.message)
		dst = append(dst, `,"param":null}`...)
	}
	if r.retryAfter != "" || len(r.ratelimitHdrs) > 0 {
		dst = append(dst, `,"headers":{`...)
		sep := false
		if r.retryAfter != "" {
			dst = append(dst, `"retry-after":`...)
			dst = jsonw.String(dst, r.retryAfter)
			sep = true
		}
		for _, h := range r.ratelimitHdrs {
			if sep {
				dst = append(dst, ',')
			}
			dst = jsonw.String(dst, h[0])
			dst = append(dst, ':')
			dst = jsonw.String(dst, h[1])
			sep = true
		}
		dst = append(dst, '}')
	}
	return append(dst, '}')
}

// newResponseID returns an id for a response the gateway answers itself.
func newResponseID() string {
	var b [24]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on supported platforms
	return "resp_" + hex.EncodeToString(b[:])
}

// appendWarmup appends the text of the two events answering a warm-up
// (generate: false) for model (a JSON string value) with response id:
// response.created and response.completed, with empty output and zero
// usage. Each event is one message; sep separates them in dst.
func appendWarmup(created, completed []byte, id string, model []byte, now time.Time) ([]byte, []byte) {
	head := func(dst []byte, typ string, seq int, status string) []byte {
		dst = append(dst, `{"type":"`...)
		dst = append(dst, typ...)
		dst = append(dst, `","sequence_number":`...)
		dst = strconv.AppendInt(dst, int64(seq), 10)
		dst = append(dst, `,"response":{"id":`...)
		dst = jsonw.String(dst, id)
		dst = append(dst, `,"object":"response","created_at":`...)
		dst = strconv.AppendInt(dst, now.Unix(), 10)
		dst = append(dst, `,"status":"`...)
		dst = append(dst, status...)
		dst = append(dst, `","model":`...)
		dst = append(dst, model...)
		return append(dst, `,"output":[],"usage":`...)
	}
	created = head(created, "response.created", 0, "in_progress")
	created = append(created, "null}}"...)
	completed = head(completed, "response.completed", 1, "completed")
	completed = append(completed, `{"input_tokens":0,"input_tokens_details":{"cached_tokens":0},"output_tokens":0,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":0}}}`...)
	return created, completed
}

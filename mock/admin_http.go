package mock

import (
	"strconv"
	"time"

	"github.com/valyala/fasthttp"
)

// admin serves the /_mock/ endpoints:
//
//	POST /_mock/fail?status=503&count=N&code=C&retry_after=S&kind=K&after=A
//	     inject failures (see Failure; count 0 or absent = until reset)
//	POST /_mock/latency?d=50ms   set the response delay
//	POST /_mock/reset[?stats=1]  clear failures and latency (and counters)
//	GET  /_mock/stats            request counters as JSON (see Stats)
func (s *Server) admin(ctx *fasthttp.RequestCtx, op string) {
	args := ctx.QueryArgs()
	method := string(ctx.Method())
	switch {
	case op == "stats" && method == fasthttp.MethodGet:
		st := s.Stats()
		ctx.SetContentType("application/json")
		ctx.SetBody(st.appendJSON(nil))
	case op == "fail" && method == fasthttp.MethodPost:
		f := Failure{Kind: string(args.Peek("kind")), Code: string(args.Peek("code"))}
		var err error
		if f.Status, err = intArg(args, "status", 503); err != nil || f.Status < 100 || f.Status > 599 {
			badArg(ctx, "status must be an HTTP status code")
			return
		}
		if f.Count, err = intArg(args, "count", 0); err != nil || f.Count < 0 {
			badArg(ctx, "count must be a non-negative integer")
			return
		}
		if f.RetryAfter, err = intArg(args, "retry_after", 0); err != nil || f.RetryAfter < 0 {
			badArg(ctx, "retry_after must be a non-negative integer (seconds)")
			return
		}
		if f.After, err = intArg(args, "after", 0); err != nil || f.After < 0 {
			badArg(ctx, "after must be a non-negative integer")
			return
		}
		switch f.Kind {
		case "", KindStatus, KindSSEError, KindCut:
		default:
			badArg(ctx, "kind must be status, sse_error or cut")
			return
		}
		s.Fail(f)
		writeOK(ctx)
	case op == "latency" && method == fasthttp.MethodPost:
		d, err := time.ParseDuration(string(args.Peek("d")))
		if err != nil || d < 0 {
			badArg(ctx, "d must be a non-negative duration such as 50ms")
			return
		}
		s.SetLatency(d)
		writeOK(ctx)
	case op == "reset" && method == fasthttp.MethodPost:
		s.Reset()
		if string(args.Peek("stats")) == "1" {
			s.ResetStats()
		}
		writeOK(ctx)
	default:
		writeError(ctx, fasthttp.StatusNotFound, "invalid_request_error", "not_found",
			"mock: unknown admin call "+method+" /_mock/"+op)
	}
}

func intArg(args *fasthttp.Args, name string, def int) (int, error) {
	v := args.Peek(name)
	if len(v) == 0 {
		return def, nil
	}
	return strconv.Atoi(string(v))
}

func badArg(ctx *fasthttp.RequestCtx, msg string) {
	writeError(ctx, fasthttp.StatusBadRequest, "invalid_request_error", "invalid_request", "mock: "+msg)
}

func writeOK(ctx *fasthttp.RequestCtx) {
	ctx.SetContentType("application/json")
	ctx.SetBodyString(`{"ok":true}`)
}

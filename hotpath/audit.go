package hotpath

import (
	"github.com/valyala/fasthttp"

	"github.com/switchyard/switchyard/router"
	"github.com/switchyard/switchyard/upstream"
)

// codeAuditUnavailable answers a request the audit log could not record in
// time (docs/residency.md).
const codeAuditUnavailable = "audit_unavailable"

// auditRefused answers 503 audit_unavailable, and reports true, when the
// audit log's writer is too far behind: no request is served that will not
// be logged.
func (g *Gateway) auditRefused(rc *fasthttp.RequestCtx, s router.Surface) bool {
	if g.AuditBehind == nil || !g.AuditBehind() {
		return false
	}
	rc.Response.Header.Set(fasthttp.HeaderRetryAfter, "1")
	writeSurfaceError(rc, s, fasthttp.StatusServiceUnavailable,
		"the audit log is behind; retry shortly", upstream.TypeServer, codeAuditUnavailable)
	return true
}

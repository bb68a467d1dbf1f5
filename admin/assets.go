package admin

import (
	"embed"
	"path"

	"github.com/valyala/fasthttp"
)

// web holds the console page: plain HTML, CSS and JavaScript, no build
// step and nothing loaded from elsewhere.
//
//go:embed web/index.html web/app.css web/app.js
var web embed.FS

// contentSecurityPolicy lets the page load only its own files and talk
// only to its own origin.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// asset serves the page's files; any other path is 404.
func (s *Server) asset(rc *fasthttp.RequestCtx, p string) {
	if p == "/" {
		p = "/index.html"
	}
	var ctype string
	switch path.Ext(p) {
	case ".html":
		ctype = "text/html; charset=utf-8"
	case ".css":
		ctype = "text/css; charset=utf-8"
	case ".js":
		ctype = "text/javascript; charset=utf-8"
	}
	b, err := web.ReadFile("web" + p)
	if err != nil || ctype == "" || path.Clean(p) != p {
		s.jsonError(rc, fasthttp.StatusNotFound, "no such page")
		return
	}
	rc.Response.Header.Set("Content-Security-Policy", contentSecurityPolicy)
	rc.SetContentType(ctype)
	rc.SetBody(b)
}

package batch

import (
	"bytes"
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"net"
	"os"
	"strconv"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/switchyard/switchyard/hotpath"
	"github.com/switchyard/switchyard/tenancy"
	"github.com/switchyard/switchyard/upstream"
)

// Uploads: POST /v1/files (a batch input file, multipart) and POST
// /v1/messages/batches (a message batch, JSON) are spooled while their
// requests are routed; nothing is sent anywhere until every request has
// passed, and a refused upload leaves nothing behind.

// maxField bounds a form field's value other than the file.
const maxField = 256

// uploadFields are the form fields an upload may carry besides the file:
// the purpose, and the file's expiry (OpenAI's expires_after).
var uploadFields = map[string]bool{"purpose": true, "expires_after[anchor]": true, "expires_after[seconds]": true}

// body returns the request's body as a reader whose every read may wait
// ReadTimeout for the client's next bytes: an upload that keeps moving is
// never cut, one that stalls is.
func (c *call) body() io.Reader {
	if s := c.rc.RequestBodyStream(); s != nil {
		return &clientReader{r: s, conn: c.rc.Conn()}
	}
	return bytes.NewReader(c.rc.PostBody())
}

type clientReader struct {
	r    io.Reader
	conn net.Conn
	read int64
}

func (r *clientReader) Read(p []byte) (int, error) {
	if r.conn != nil {
		r.conn.SetReadDeadline(time.Now().Add(hotpath.ReadTimeout)) //nolint:errcheck // the read reports it
	}
	n, err := r.r.Read(p)
	r.read += int64(n)
	return n, err
}

// formReader is an upload's body as the multipart reader reads it: the
// bytes read while no file part is being spooled (boundaries, part heads,
// form fields) are held to room.
type formReader struct {
	r      io.Reader
	room   int64
	inFile bool
}

var errFormTooLarge = errors.New("the upload's form holds more than " + strconv.Itoa(hotpath.UploadFramingBytes) +
	" bytes besides the file (part heads and fields)")

func (f *formReader) Read(p []byte) (int, error) {
	if !f.inFile {
		if f.room <= 0 {
			return 0, errFormTooLarge
		}
		p = p[:min(int64(len(p)), f.room)]
	}
	n, err := f.r.Read(p)
	if !f.inFile {
		f.room -= int64(n)
	}
	return n, err
}

// newSpool starts the upload's spool, reserving its declared length.
func (c *call) newSpool() (*spool, bool) {
	srv := &c.st.Config.Server
	want := int64(0)
	if cl := c.rc.Request.Header.ContentLength(); cl > 0 {
		want = min(int64(cl), srv.FileLimit()+hotpath.UploadFramingBytes)
	}
	sp, err := c.s.spools.newSpool(srv.SpoolDir, srv.SpoolLimit(), want)
	switch {
	case errors.Is(err, errSpoolFull):
		c.spoolFull()
		return nil, false
	case err != nil:
		c.s.Log.Error().Err(err).Msg("batch: cannot create a spool file; check server.spool_dir")
		c.fail(fasthttp.StatusInternalServerError, "the gateway cannot spool the upload", upstream.TypeServer, upstream.CodeInternalError)
		return nil, false
	}
	return sp, true
}

// spoolFull answers an upload for which there is no spool room: 503 with
// Retry-After.
func (c *call) spoolFull() {
	c.rc.SetConnectionClose() // the rest of the body is not read
	c.rc.Response.Header.Set(fasthttp.HeaderRetryAfter, "10")
	c.fail(fasthttp.StatusServiceUnavailable, errSpoolFull.Error(), upstream.TypeServer, codeSpoolFull)
}

// codeSpoolFull: every spool byte (server.max_spool_bytes) is in use.
const codeSpoolFull = "upload_capacity_exceeded"

// readFailed answers an upload whose body could not be read: the spool's
// disk failing (500), the spools full (503), the client too slow (408) or
// gone, or the framing broken (400).
func (c *call) readFailed(err error) {
	c.rc.SetConnectionClose()
	var ne net.Error
	switch {
	case errors.Is(err, errSpoolFull):
		c.spoolFull()
	case errors.Is(err, fasthttp.ErrBodyTooLarge):
		c.refuse(tooLarge("the upload is over server.max_batch_file_bytes"))
	case errors.Is(err, errFormTooLarge):
		c.refuse(tooLarge(err.Error()))
	case errors.As(err, &ne) && ne.Timeout():
		c.fail(fasthttp.StatusRequestTimeout, "timed out reading the upload", upstream.TypeInvalidRequest, upstream.CodeInvalidRequest)
	case errors.As(err, new(*os.PathError)):
		c.s.Log.Error().Err(err).Msg("batch: cannot write a spool file; check server.spool_dir")
		c.fail(fasthttp.StatusInternalServerError, "the gateway cannot spool the upload", upstream.TypeServer, upstream.CodeInternalError)
	default:
		c.badRequest("cannot read the upload: " + err.Error())
	}
}

// upload serves POST /v1/files.
func (c *call) upload() {
	c.op = "upload"
	if !c.countCall() {
		return
	}
	mt, params, err := mime.ParseMediaType(string(c.rc.Request.Header.ContentType()))
	if err != nil || mt != "multipart/form-data" || params["boundary"] == "" {
		c.rc.SetConnectionClose()
		c.badRequest("an upload is multipart/form-data with a file and purpose \"batch\"")
		return
	}
	lr, ref := c.caller.LineRouter(c.st)
	if ref != nil {
		c.rc.SetConnectionClose()
		c.refuse(ref)
		return
	}
	sp, ok := c.newSpool()
	if !ok {
		return
	}
	defer sp.remove()
	col := newCollector(lr, c.st, "line")
	var (
		fields   [][2]string
		filename string
		sawFile  bool
		purpose  string
	)
	maxLine := c.st.MaxRequestBytes()
	// Go's multipart reader holds a part's head whole (up to 10 MiB) before
	// it hands the part over: the bytes besides the file's are held to
	// the room an upload has for them.
	body := &formReader{r: c.body(), room: hotpath.UploadFramingBytes}
	mr := multipart.NewReader(body, params["boundary"])
	for {
		part, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			c.readFailed(err)
			return
		}
		name := part.FormName()
		switch {
		case name == "file":
			if sawFile {
				c.rc.SetConnectionClose()
				c.badRequest("the upload has two files; send one")
				return
			}
			sawFile, filename = true, part.FileName()
			body.inFile = true
			ref, err := spoolLines(part, sp, maxLine, c.st.Config.Server.FileLimit(), func(n int, line []byte, at int64) *hotpath.Refusal {
				s, body, off, err := parseLine(line)
				if err != nil {
					return col.refusal(n-1, fasthttp.StatusBadRequest, upstream.TypeInvalidRequest, upstream.CodeInvalidRequest, err.Error())
				}
				return col.add(n-1, s, body, at+int64(off))
			})
			body.inFile = false
			if err != nil {
				c.readFailed(err)
				return
			}
			if ref != nil {
				c.rc.SetConnectionClose()
				c.model = col.firstModel()
				c.refuse(ref)
				return
			}
		case uploadFields[name]:
			v, err := io.ReadAll(io.LimitReader(part, maxField+1))
			if err != nil {
				c.readFailed(err)
				return
			}
			if len(v) > maxField {
				c.rc.SetConnectionClose()
				c.badRequest("the form field " + name + " is over " + strconv.Itoa(maxField) + " bytes")
				return
			}
			for _, f := range fields {
				if f[0] == name {
					c.rc.SetConnectionClose()
					c.badRequest("the form field " + name + " is sent twice; send it once")
					return
				}
			}
			if name == "purpose" {
				if purpose = string(v); purpose != "batch" {
					c.rc.SetConnectionClose()
					c.badRequest("purpose " + quoteShort(v) + " is not accepted; the gateway takes batch input files only (purpose \"batch\")")
					return
				}
			}
			fields = append(fields, [2]string{name, string(v)})
		default:
			c.rc.SetConnectionClose()
			c.badRequest("the form field " + quoteShort([]byte(name)) + " is not accepted; an upload has file, purpose and expires_after")
			return
		}
	}
	switch {
	case !sawFile:
		c.badRequest("the upload has no file")
		return
	case purpose == "":
		c.badRequest("the upload has no purpose; send purpose \"batch\"")
		return
	}
	c.model, c.rule = col.firstModel(), col.rule
	members, ref := col.members()
	if ref != nil {
		c.refuse(ref)
		return
	}
	if err := sp.finish(); err != nil {
		c.readFailed(err)
		return
	}
	form, err := newFormFile(fields, filename)
	if err != nil {
		c.badRequest("cannot relay the upload's form: " + err.Error())
		return
	}
	resp := fasthttp.AcquireResponse()
	defer fasthttp.ReleaseResponse(resp)
	x := &exchange{method: fasthttp.MethodPost, path: func(*upstream.Target) string { return kindFiles.base },
		body: func(t *upstream.Target, req *fasthttp.Request) (int64, error) {
			repl := rewrites(t, col.models)
			n := int64(len(form.head)) + rewrittenSize(sp.size, col.spans, repl) + int64(len(form.tail))
			req.Header.SetContentType(form.contentType)
			req.SetBodyStream(io.MultiReader(bytes.NewReader(form.head), newRewriter(sp.f, sp.size, col.spans, repl),
				bytes.NewReader(form.tail)), int(n))
			return n, nil
		}}
	t := c.walk(members, x, resp)
	if t == nil {
		return
	}
	c.stored(t, resp, kindFiles, func(o *tenancy.Object) {
		o.Purpose = "batch"
		col.record(o)
	})
}

// stored records the object a 2xx answer of t (in resp) hands out, as the
// caller's, and relays the answer; fill completes the record. When the
// answer has no usable id it is 502; when the record cannot be written
// the object is deleted upstream again (best effort) and the answer is
// 503: no id is handed out that the gateway does not know the owner of.
func (c *call) stored(t *upstream.Target, resp *fasthttp.Response, k *kind, fill func(o *tenancy.Object)) (tenancy.Object, bool) {
	x, ok := parseObject(resp.Body())
	if !ok {
		c.protocolError("a JSON object")
		return tenancy.Object{}, false
	}
	defer x.release()
	id := str(x.v, "id")
	if !validID([]byte(id)) {
		c.protocolError("a usable id")
		return tenancy.Object{}, false
	}
	c.id = []byte(id)
	o := tenancy.Object{Kind: k.obj, ID: id, Key: c.caller.Key(), Target: t.Name, Created: createdAt(x.v, c.s.clock())}
	fill(&o)
	ctx, cancel := c.storeCtx()
	err := c.s.Store.Put(ctx, o, c.st.Config.Server.Retention())
	cancel()
	if err != nil {
		c.s.undo(t, k, id, c.rc.Request.Header.Peek("anthropic-version"))
		c.storeDown(err)
		return tenancy.Object{}, false
	}
	body := resp.Body()
	if k.messages {
		body = c.withResultsURL(x.v, id, body)
	}
	c.relay(t, resp.StatusCode(), body)
	return o, true
}

// undo deletes (or, for a batch, cancels) an object t just handed out
// that could not be recorded, in the background: nobody can reach it
// through the gateway, and it should not run or be kept.
func (s *Server) undo(t *upstream.Target, k *kind, id string, version []byte) {
	method, suffix := fasthttp.MethodDelete, ""
	if k == kindBatches {
		method, suffix = fasthttp.MethodPost, "/cancel"
	}
	go func() {
		req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
		defer fasthttp.ReleaseRequest(req)
		defer fasthttp.ReleaseResponse(resp)
		req.Header.SetMethod(method)
		var h *fasthttp.RequestHeader
		if len(version) > 0 {
			h = &fasthttp.RequestHeader{}
			h.SetBytesV("anthropic-version", version)
		}
		if k == kindMessages {
			// A message batch is cancelled before it can be deleted.
			method, suffix = fasthttp.MethodPost, "/cancel"
			req.Header.SetMethod(method)
		}
		err := t.Transfer(req, resp, objectPath(k, id, suffix), h, time.Now().Add(t.Timeout))
		s.Log.Warn().Err(err).Str("target", t.Name).Str("id", id).Int("status", resp.StatusCode()).
			Msg("batch: an object handed out by the target could not be recorded; asked the target to drop it")
	}()
}

package batch

import (
	"bytes"
	"io"
	"mime/multipart"
	"net/textproto"
	"strings"

	"github.com/switchyard/switchyard/upstream"
)

// Sending a spool: each member gets the upload as the client sent it, but
// for the model of every request, which its model_map rewrites (an Azure
// member needs its deployment names): the literals were found when the
// requests were routed (collector.spans), so sending is a copy that
// splices them, streamed from the spool, never held whole.

// rewrites returns, for member t, the literal each of the collector's
// models becomes (nil: kept as written).
func rewrites(t *upstream.Target, models []string) [][]byte {
	out := make([][]byte, len(models))
	for i, m := range models {
		if up := t.UpstreamModel([]byte(m)); string(up) != m {
			out[i] = upstream.AppendJSONString(nil, string(up))
		}
	}
	return out
}

// rewrittenSize is the size of size bytes of spool with spans rewritten
// by repl.
func rewrittenSize(size int64, spans []modelSpan, repl [][]byte) int64 {
	for _, s := range spans {
		if r := repl[s.model]; r != nil {
			size += int64(len(r)) - int64(s.n)
		}
	}
	return size
}

// rewriter reads a spool from its start, each span's literal replaced by
// its model's rewrite.
type rewriter struct {
	src   io.ReaderAt
	size  int64
	spans []modelSpan
	repl  [][]byte
	pos   int64  // next spool byte to read
	next  int    // next span
	out   []byte // a replacement being emitted
}

func newRewriter(src io.ReaderAt, size int64, spans []modelSpan, repl [][]byte) *rewriter {
	return &rewriter{src: src, size: size, spans: spans, repl: repl}
}

func (r *rewriter) Read(p []byte) (int, error) {
	if len(r.out) > 0 {
		n := copy(p, r.out)
		r.out = r.out[n:]
		return n, nil
	}
	for r.next < len(r.spans) && r.repl[r.spans[r.next].model] == nil {
		r.next++ // this member keeps that model as written
	}
	end := r.size
	if r.next < len(r.spans) {
		end = r.spans[r.next].at
	}
	if r.pos == end && r.next < len(r.spans) {
		s := r.spans[r.next]
		r.next++
		r.pos += int64(s.n)
		r.out = r.repl[s.model]
		n := copy(p, r.out)
		r.out = r.out[n:]
		return n, nil
	}
	if r.pos >= r.size {
		return 0, io.EOF
	}
	want := min(int64(len(p)), end-r.pos)
	n, err := r.src.ReadAt(p[:want], r.pos)
	r.pos += int64(n)
	if err == io.EOF && r.pos < r.size {
		err = io.ErrUnexpectedEOF
	} else if err == io.EOF {
		err = nil
	}
	return n, err
}

// formFile is the multipart body of a file upload around its content: the
// form fields first, then the file part's head; tail closes the body.
type formFile struct {
	contentType string
	head, tail  []byte
}

// newFormFile lays out a multipart/form-data body holding fields (name,
// value pairs, in order) and a file part named "file" with filename.
func newFormFile(fields [][2]string, filename string) (*formFile, error) {
	var b bytes.Buffer
	w := multipart.NewWriter(&b)
	for _, f := range fields {
		if err := w.WriteField(f[0], f[1]); err != nil {
			return nil, err
		}
	}
	h := make(textproto.MIMEHeader)
	h.Set("Content-Disposition", `form-data; name="file"; filename="`+escapeQuotes(filename)+`"`)
	h.Set("Content-Type", "application/jsonl")
	if _, err := w.CreatePart(h); err != nil {
		return nil, err
	}
	return &formFile{contentType: w.FormDataContentType(), head: append([]byte(nil), b.Bytes()...),
		tail: []byte("\r\n--" + w.Boundary() + "--\r\n")}, nil
}

var quoteEscaper = strings.NewReplacer("\\", "\\\\", `"`, "\\\"", "\r", "", "\n", "")

func escapeQuotes(s string) string { return quoteEscaper.Replace(s) }

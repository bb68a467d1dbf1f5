package mock

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"mime"
	"mime/multipart"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"
)

// The providers' batch APIs, as far as the SDKs and the gateway use them,
// run to completion in memory:
//
//   - OpenAI's Files (POST /v1/files multipart with purpose batch, GET and
//     DELETE /v1/files/{id}, GET /v1/files/{id}/content) and Batches (POST
//     /v1/batches, GET /v1/batches/{id}, POST /v1/batches/{id}/cancel). A
//     batch advances one step each time it is read: validating,
//     in_progress, completed (its output file written: one chat
//     completion a line, the model each line named, and the batch's usage
//     summed); a cancelled one goes cancelling, cancelled.
//   - Anthropic's Message Batches (POST /v1/messages/batches, GET, DELETE
//     /v1/messages/batches/{id}, POST …/cancel, GET …/results), on the same
//     listener: in_progress, then ended on the next read, with one
//     succeeded message a request (with usage) in its results.
//
// Ids carry the mock's name and a sequence number. BatchStats counts every
// call, so a test can tell that none reached the mock.

// BatchStats counts the batch API calls a mock received.
type BatchStats struct {
	Uploads, FileReads, FileDeletes, Contents    int64
	BatchCreates, BatchReads, BatchCancels       int64
	MessageCreates, MessageReads, MessageCancels int64
	MessageDeletes, Results, Lists               int64
	UploadedBytes                                int64
}

// Calls is the total of every batch API call.
func (b BatchStats) Calls() int64 {
	return b.Uploads + b.FileReads + b.FileDeletes + b.Contents + b.BatchCreates + b.BatchReads + b.BatchCancels +
		b.MessageCreates + b.MessageReads + b.MessageCancels + b.MessageDeletes + b.Results + b.Lists
}

type batchCounters struct {
	uploads, fileReads, fileDeletes, contents    atomic.Int64
	batchCreates, batchReads, batchCancels       atomic.Int64
	msgCreates, msgReads, msgCancels, msgDeletes atomic.Int64
	results, lists, uploadedBytes                atomic.Int64
}

type mockFile struct {
	id, filename, purpose string
	created               int64
	content               []byte
}

type mockBatch struct {
	obj     map[string]any
	lines   [][]byte // the input file's lines
	steps   int
	cancel  bool
	results []byte // message batches: the results JSONL once ended
}

// batchAPI is a mock's batch state.
type batchAPI struct {
	mu       sync.Mutex
	files    map[string]*mockFile
	batches  map[string]*mockBatch
	messages map[string]*mockBatch
	seq      atomic.Uint64
	n        batchCounters
}

func (s *Server) batchState() *batchAPI {
	s.batchOnce.Do(func() {
		s.batchAPI = &batchAPI{files: map[string]*mockFile{}, batches: map[string]*mockBatch{}, messages: map[string]*mockBatch{}}
	})
	return s.batchAPI
}

// BatchStats returns the batch API call counts.
func (s *Server) BatchStats() BatchStats {
	b := &s.batchState().n
	return BatchStats{
		Uploads: b.uploads.Load(), FileReads: b.fileReads.Load(), FileDeletes: b.fileDeletes.Load(), Contents: b.contents.Load(),
		BatchCreates: b.batchCreates.Load(), BatchReads: b.batchReads.Load(), BatchCancels: b.batchCancels.Load(),
		MessageCreates: b.msgCreates.Load(), MessageReads: b.msgReads.Load(), MessageCancels: b.msgCancels.Load(),
		MessageDeletes: b.msgDeletes.Load(), Results: b.results.Load(), Lists: b.lists.Load(), UploadedBytes: b.uploadedBytes.Load(),
	}
}

// File returns the content of the stored file id (nil: none), for tests
// that check what reached the provider.
func (s *Server) File(id string) []byte {
	b := s.batchState()
	b.mu.Lock()
	defer b.mu.Unlock()
	if f := b.files[id]; f != nil {
		return f.content
	}
	return nil
}

// MessageBatchRequests returns the requests body of message batch id as
// received (nil: none).
func (s *Server) MessageBatchRequests(id string) [][]byte {
	b := s.batchState()
	b.mu.Lock()
	defer b.mu.Unlock()
	if m := b.messages[id]; m != nil {
		return m.lines
	}
	return nil
}

func (b *batchAPI) id(prefix, name string) string {
	return prefix + name + "-" + strconv.FormatUint(b.seq.Add(1), 10)
}

// batchPath answers a batch API path; false: not one.
func (s *Server) batchPath(ctx *fasthttp.RequestCtx, path string) bool {
	var api, rest string
	switch {
	case strings.HasPrefix(path, "/v1/messages/batches"):
		api, rest = "messages", strings.TrimPrefix(path, "/v1/messages/batches")
	case strings.HasPrefix(path, "/v1/files"):
		api, rest = "files", strings.TrimPrefix(path, "/v1/files")
	case strings.HasPrefix(path, "/v1/batches"):
		api, rest = "batches", strings.TrimPrefix(path, "/v1/batches")
	default:
		return false
	}
	if rest != "" && rest[0] != '/' {
		return false
	}
	if s.opts.APIKey != "" && !s.authorized(ctx) && string(ctx.Request.Header.Peek("x-api-key")) != s.opts.APIKey {
		s.stats.unauthorized.Add(1)
		writeError(ctx, fasthttp.StatusUnauthorized, "invalid_request_error", "invalid_api_key", "mock: incorrect API key provided")
		return true
	}
	id, sub, _ := strings.Cut(strings.TrimPrefix(rest, "/"), "/")
	m := string(ctx.Method())
	b := s.batchState()
	if (m == fasthttp.MethodPost && sub == "" && id == "") || sub == "cancel" {
		if inj := s.takeFailure(); inj != nil {
			s.stats.failed.Add(1)
			s.fail(ctx, inj, surfChat, "", false)
			return true
		}
	}
	switch {
	case api == "files" && id == "" && m == fasthttp.MethodPost:
		b.n.uploads.Add(1)
		s.uploadFile(ctx)
	case api == "files" && id != "" && sub == "" && m == fasthttp.MethodGet:
		b.n.fileReads.Add(1)
		s.withFile(ctx, id, func(f *mockFile) { writeJSON(ctx, fileObject(f)) })
	case api == "files" && id != "" && sub == "" && m == fasthttp.MethodDelete:
		b.n.fileDeletes.Add(1)
		s.withFile(ctx, id, func(f *mockFile) {
			delete(b.files, id)
			writeJSON(ctx, map[string]any{"id": id, "object": "file", "deleted": true})
		})
	case api == "files" && id != "" && sub == "content" && m == fasthttp.MethodGet:
		b.n.contents.Add(1)
		s.withFile(ctx, id, func(f *mockFile) {
			ctx.SetContentType("application/octet-stream")
			ctx.SetBody(f.content)
		})
	case api == "batches" && id == "" && m == fasthttp.MethodPost:
		b.n.batchCreates.Add(1)
		s.createBatch(ctx)
	case api == "batches" && id != "" && sub == "" && m == fasthttp.MethodGet:
		b.n.batchReads.Add(1)
		s.withBatch(ctx, b.batches, id, func(x *mockBatch) { s.advance(x); writeJSON(ctx, x.obj) })
	case api == "batches" && id != "" && sub == "cancel" && m == fasthttp.MethodPost:
		b.n.batchCancels.Add(1)
		s.withBatch(ctx, b.batches, id, func(x *mockBatch) {
			if st := x.obj["status"]; st == "completed" || st == "failed" || st == "expired" {
				writeError(ctx, 400, "invalid_request_error", "invalid_request", "mock: the batch has ended")
				return
			}
			x.cancel, x.obj["status"], x.obj["cancelling_at"] = true, "cancelling", time.Now().Unix()
			writeJSON(ctx, x.obj)
		})
	case api == "messages" && id == "" && m == fasthttp.MethodPost:
		b.n.msgCreates.Add(1)
		s.createMessageBatch(ctx)
	case api == "messages" && id != "" && sub == "" && m == fasthttp.MethodGet:
		b.n.msgReads.Add(1)
		s.withBatch(ctx, b.messages, id, func(x *mockBatch) { s.advanceMessages(ctx, x); writeJSON(ctx, x.obj) })
	case api == "messages" && id != "" && sub == "cancel" && m == fasthttp.MethodPost:
		b.n.msgCancels.Add(1)
		s.withBatch(ctx, b.messages, id, func(x *mockBatch) {
			if x.obj["processing_status"] == "in_progress" {
				x.cancel, x.obj["processing_status"] = true, "canceling"
				x.obj["cancel_initiated_at"] = time.Now().UTC().Format(time.RFC3339)
			}
			writeJSON(ctx, x.obj)
		})
	case api == "messages" && id != "" && sub == "" && m == fasthttp.MethodDelete:
		b.n.msgDeletes.Add(1)
		s.withBatch(ctx, b.messages, id, func(x *mockBatch) {
			if x.obj["processing_status"] != "ended" {
				writeError(ctx, 400, "invalid_request_error", "invalid_request", "mock: a message batch must end before it is deleted")
				return
			}
			delete(b.messages, id)
			writeJSON(ctx, map[string]any{"id": id, "type": "message_batch_deleted"})
		})
	case api == "messages" && id != "" && sub == "results" && m == fasthttp.MethodGet:
		b.n.results.Add(1)
		s.withBatch(ctx, b.messages, id, func(x *mockBatch) {
			if x.results == nil {
				writeError(ctx, 400, "invalid_request_error", "invalid_request", "mock: the batch has not ended")
				return
			}
			ctx.SetContentType("application/binary")
			ctx.SetBody(x.results)
		})
	case id == "" && m == fasthttp.MethodGet:
		b.n.lists.Add(1)
		writeJSON(ctx, map[string]any{"object": "list", "data": []any{}, "has_more": false})
	default:
		s.stats.notFound.Add(1)
		writeError(ctx, fasthttp.StatusNotFound, "invalid_request_error", "not_found", "mock: unknown batch path "+strconv.Quote(path))
	}
	return true
}

func writeJSON(ctx *fasthttp.RequestCtx, v any) {
	b, _ := json.Marshal(v)
	ctx.SetContentType("application/json")
	ctx.SetBody(b)
}

func fileObject(f *mockFile) map[string]any {
	return map[string]any{"id": f.id, "object": "file", "bytes": len(f.content), "created_at": f.created,
		"filename": f.filename, "purpose": f.purpose, "status": "processed"}
}

func (s *Server) withFile(ctx *fasthttp.RequestCtx, id string, fn func(*mockFile)) {
	b := s.batchState()
	b.mu.Lock()
	defer b.mu.Unlock()
	f := b.files[id]
	if f == nil {
		writeError(ctx, fasthttp.StatusNotFound, "invalid_request_error", "not_found", "mock: no such file "+strconv.Quote(id))
		return
	}
	fn(f)
}

func (s *Server) withBatch(ctx *fasthttp.RequestCtx, m map[string]*mockBatch, id string, fn func(*mockBatch)) {
	b := s.batchState()
	b.mu.Lock()
	defer b.mu.Unlock()
	x := m[id]
	if x == nil {
		writeError(ctx, fasthttp.StatusNotFound, "invalid_request_error", "not_found", "mock: no such batch "+strconv.Quote(id))
		return
	}
	fn(x)
}

// uploadFile stores a multipart upload's file part, read as a stream.
func (s *Server) uploadFile(ctx *fasthttp.RequestCtx) {
	_, params, err := mime.ParseMediaType(string(ctx.Request.Header.ContentType()))
	if err != nil || params["boundary"] == "" {
		writeError(ctx, 400, "invalid_request_error", "invalid_request", "mock: not multipart")
		return
	}
	var body io.Reader = bytes.NewReader(ctx.PostBody())
	if st := ctx.RequestBodyStream(); st != nil {
		body = st
	}
	mr := multipart.NewReader(body, params["boundary"])
	f := &mockFile{created: time.Now().Unix()}
	var purpose string
	for {
		p, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			writeError(ctx, 400, "invalid_request_error", "invalid_request", "mock: bad multipart: "+err.Error())
			return
		}
		switch p.FormName() {
		case "file":
			f.filename = p.FileName()
			f.content, err = io.ReadAll(p)
			if err != nil {
				writeError(ctx, 400, "invalid_request_error", "invalid_request", "mock: cannot read the file")
				return
			}
		case "purpose":
			v, _ := io.ReadAll(io.LimitReader(p, 64))
			purpose = string(v)
		}
	}
	if purpose != "batch" || f.content == nil {
		writeError(ctx, 400, "invalid_request_error", "invalid_request", "mock: want purpose batch and a file")
		return
	}
	b := s.batchState()
	b.n.uploadedBytes.Add(int64(len(f.content)))
	f.purpose, f.id = purpose, b.id("file-", s.opts.Name)
	b.mu.Lock()
	b.files[f.id] = f
	b.mu.Unlock()
	writeJSON(ctx, fileObject(f))
}

// createBatch creates a batch on a stored file.
func (s *Server) createBatch(ctx *fasthttp.RequestCtx) {
	var req struct {
		InputFileID      string `json:"input_file_id"`
		Endpoint         string `json:"endpoint"`
		CompletionWindow string `json:"completion_window"`
	}
	if json.Unmarshal(ctx.PostBody(), &req) != nil || req.InputFileID == "" {
		writeError(ctx, 400, "invalid_request_error", "invalid_request", "mock: want input_file_id")
		return
	}
	b := s.batchState()
	b.mu.Lock()
	defer b.mu.Unlock()
	f := b.files[req.InputFileID]
	if f == nil {
		writeError(ctx, fasthttp.StatusNotFound, "invalid_request_error", "not_found", "mock: no such file "+strconv.Quote(req.InputFileID))
		return
	}
	var lines [][]byte
	sc := bufio.NewScanner(bytes.NewReader(f.content))
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	for sc.Scan() {
		if l := bytes.TrimSpace(sc.Bytes()); len(l) > 0 {
			lines = append(lines, append([]byte(nil), l...))
		}
	}
	id := b.id("batch_", s.opts.Name)
	now := time.Now().Unix()
	x := &mockBatch{lines: lines, obj: map[string]any{"id": id, "object": "batch", "endpoint": req.Endpoint,
		"input_file_id": req.InputFileID, "completion_window": req.CompletionWindow, "status": "validating",
		"created_at": now, "expires_at": now + 86400, "errors": nil, "output_file_id": nil, "error_file_id": nil,
		"request_counts": map[string]int{"total": len(lines), "completed": 0, "failed": 0}, "metadata": nil}}
	b.batches[id] = x
	writeJSON(ctx, x.obj)
}

// advance moves a batch one step on (under the state's lock).
func (s *Server) advance(x *mockBatch) {
	switch x.obj["status"] {
	case "validating":
		x.obj["status"], x.obj["in_progress_at"] = "in_progress", time.Now().Unix()
	case "in_progress":
		s.complete(x)
	case "cancelling":
		x.obj["status"], x.obj["cancelled_at"] = "cancelled", time.Now().Unix()
	}
}

// complete writes a batch's output file and usage.
func (s *Server) complete(x *mockBatch) {
	b := s.batchState()
	prompt, completion := s.UsageFigures()
	var out bytes.Buffer
	for i, l := range x.lines {
		var line struct {
			CustomID string `json:"custom_id"`
			Body     struct {
				Model string `json:"model"`
			} `json:"body"`
		}
		_ = json.Unmarshal(l, &line)
		answer := s.appendChat(nil, uint64(i+1), []byte(line.Body.Model))
		out.WriteString(`{"id":"batch_req_` + strconv.Itoa(i+1) + `","custom_id":`)
		cid, _ := json.Marshal(line.CustomID)
		out.Write(cid)
		out.WriteString(`,"response":{"status_code":200,"request_id":"req_` + strconv.Itoa(i+1) + `","body":`)
		out.Write(answer)
		out.WriteString("},\"error\":null}\n")
	}
	f := &mockFile{id: b.id("file-", s.opts.Name), filename: "batch_output.jsonl", purpose: "batch_output",
		created: time.Now().Unix(), content: out.Bytes()}
	b.files[f.id] = f
	n := len(x.lines)
	x.obj["status"], x.obj["completed_at"], x.obj["output_file_id"] = "completed", time.Now().Unix(), f.id
	x.obj["request_counts"] = map[string]int{"total": n, "completed": n, "failed": 0}
	x.obj["usage"] = map[string]any{"input_tokens": prompt * n, "input_tokens_details": map[string]int{"cached_tokens": 0},
		"output_tokens": completion * n, "output_tokens_details": map[string]int{"reasoning_tokens": 0},
		"total_tokens": (prompt + completion) * n}
}

// createMessageBatch creates a message batch.
func (s *Server) createMessageBatch(ctx *fasthttp.RequestCtx) {
	var req struct {
		Requests []json.RawMessage `json:"requests"`
	}
	body := ctx.PostBody()
	if st := ctx.RequestBodyStream(); st != nil {
		body, _ = io.ReadAll(st)
	}
	if json.Unmarshal(body, &req) != nil || len(req.Requests) == 0 {
		writeAnthropicError(ctx, 400, "invalid_request_error", "mock: want requests")
		return
	}
	b := s.batchState()
	id := b.id("msgbatch_", s.opts.Name)
	now := time.Now().UTC()
	x := &mockBatch{obj: map[string]any{"id": id, "type": "message_batch", "processing_status": "in_progress",
		"request_counts": map[string]int{"processing": len(req.Requests), "succeeded": 0, "errored": 0, "canceled": 0, "expired": 0},
		"ended_at":       nil, "created_at": now.Format(time.RFC3339), "expires_at": now.Add(24 * time.Hour).Format(time.RFC3339),
		"archived_at": nil, "cancel_initiated_at": nil, "results_url": nil}}
	for _, r := range req.Requests {
		x.lines = append(x.lines, []byte(r))
	}
	b.mu.Lock()
	b.messages[id] = x
	b.mu.Unlock()
	writeJSON(ctx, x.obj)
}

// advanceMessages ends a message batch on its next read after creation.
func (s *Server) advanceMessages(ctx *fasthttp.RequestCtx, x *mockBatch) {
	if x.obj["processing_status"] == "ended" {
		return
	}
	x.steps++
	if x.steps < 1 && !x.cancel {
		return
	}
	prompt, completion := s.UsageFigures()
	var out bytes.Buffer
	n := len(x.lines)
	counts := map[string]int{"processing": 0, "succeeded": n, "errored": 0, "canceled": 0, "expired": 0}
	if x.cancel {
		counts["succeeded"], counts["canceled"] = 0, n
	}
	for i, l := range x.lines {
		var r struct {
			CustomID string `json:"custom_id"`
			Params   struct {
				Model string `json:"model"`
			} `json:"params"`
		}
		_ = json.Unmarshal(l, &r)
		cid, _ := json.Marshal(r.CustomID)
		model, _ := json.Marshal(r.Params.Model)
		out.WriteString(`{"custom_id":`)
		out.Write(cid)
		if x.cancel {
			out.WriteString(`,"result":{"type":"canceled"}}` + "\n")
			continue
		}
		out.WriteString(`,"result":{"type":"succeeded","message":{"id":"msg_mock_` + strconv.Itoa(i+1) +
			`","type":"message","role":"assistant","model":`)
		out.Write(model)
		out.WriteString(`,"content":[{"type":"text","text":"` + s.content + `"}],"stop_reason":"end_turn","stop_sequence":null,` +
			`"usage":{"input_tokens":` + strconv.Itoa(prompt) + `,"output_tokens":` + strconv.Itoa(completion) + `}}}}` + "\n")
	}
	x.results = out.Bytes()
	x.obj["processing_status"], x.obj["request_counts"] = "ended", counts
	x.obj["ended_at"] = time.Now().UTC().Format(time.RFC3339)
	x.obj["results_url"] = "http://" + string(ctx.Host()) + "/v1/messages/batches/" + x.obj["id"].(string) + "/results"
}

func writeAnthropicError(ctx *fasthttp.RequestCtx, status int, typ, msg string) {
	writeJSON(ctx, map[string]any{"type": "error", "error": map[string]string{"type": typ, "message": msg}})
	ctx.SetStatusCode(status)
}

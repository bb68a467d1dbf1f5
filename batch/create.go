package batch

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/valyala/fasthttp"

	"github.com/switchyard/switchyard/hotpath"
	"github.com/switchyard/switchyard/quota"
	"github.com/switchyard/switchyard/router"
	"github.com/switchyard/switchyard/tenancy"
	"github.com/switchyard/switchyard/upstream"
)

// Creating batches: an OpenAI batch is created where its input file is,
// for the file's owner only; a message batch is an upload of its own,
// routed request by request.

// readSmallBody reads a request body of at most limit bytes (an OpenAI
// batch create); ok false: answered.
func (c *call) readSmallBody(limit int) ([]byte, bool) {
	b, err := io.ReadAll(io.LimitReader(c.body(), int64(limit)+1))
	if err != nil {
		c.readFailed(err)
		return nil, false
	}
	if len(b) > limit {
		c.rc.SetConnectionClose()
		c.refuse(tooLarge("request body is too large; at most " + strconv.Itoa(limit) + " bytes allowed"))
		return nil, false
	}
	return b, true
}

// batchCreateKeys are the members of an OpenAI batch create.
var batchCreateKeys = []string{"input_file_id", "endpoint", "completion_window", "metadata", "output_expires_after"}

// createBatch serves POST /v1/batches: the body is checked strictly (each
// known member once, no other: the provider must read the same
// input_file_id as the gateway), the input file must be the caller's, the
// estimate of its lines is reserved, and the body goes as it came to the
// file's target.
func (c *call) createBatch() {
	c.op = "create"
	body, ok := c.readSmallBody(c.st.MaxRequestBytes())
	if !ok {
		return
	}
	seen := map[string]bool{}
	var input, endpoint string
	err := hotpath.ObjectMembers(body, func(key string, v []byte) error {
		known := false
		for _, k := range batchCreateKeys {
			if key == k {
				known = true
			} else if strings.EqualFold(key, k) {
				return fmt.Errorf("has the key %q; send %q exactly", key, k)
			}
		}
		if !known {
			return fmt.Errorf("has the key %q; a batch has %s", key, strings.Join(batchCreateKeys, ", "))
		}
		if seen[key] {
			return fmt.Errorf("has %q twice", key)
		}
		seen[key] = true
		if key == "input_file_id" {
			s, ok := hotpath.JSONString(v)
			if !ok {
				return errors.New(`"input_file_id" must be a string`)
			}
			input = s
		}
		if key == "endpoint" {
			s, ok := hotpath.JSONString(v)
			if !ok {
				return errors.New(`"endpoint" must be a string`)
			}
			endpoint = s
		}
		return nil
	})
	if err != nil {
		c.badRequest("request body: " + err.Error())
		return
	}
	if input == "" {
		c.badRequest(`request body has no "input_file_id"`)
		return
	}
	if !validID([]byte(input)) {
		c.notFound("no file " + strconv.Quote(input) + " was found")
		return
	}
	c.id = []byte(input)
	t, file, ok := c.owned(kindFiles)
	if !ok {
		return
	}
	if file.Purpose != "batch" {
		c.badRequest("file " + strconv.Quote(input) + " is not a batch input file")
		return
	}
	if !c.endpointOfLines(endpoint, input, file) {
		return
	}
	c.id = nil
	hold, ok := c.reserve(file.Tokens)
	if !ok {
		return
	}
	resp := fasthttp.AcquireResponse()
	defer fasthttp.ReleaseResponse(resp)
	x := &exchange{method: fasthttp.MethodPost, path: func(*upstream.Target) string { return kindBatches.base },
		body: func(_ *upstream.Target, req *fasthttp.Request) (int64, error) {
			req.Header.SetContentType("application/json")
			req.SetBodyRaw(body)
			return int64(len(body)), nil
		}}
	if c.walk([]*upstream.Target{t}, x, resp) == nil {
		c.release(hold)
		return
	}
	o, ok := c.stored(t, resp, kindBatches, func(o *tenancy.Object) {
		o.Surface, o.Models, o.Input = file.Surface, file.Models, input
		o.Tokens, o.Day, o.Month = hold.Tokens, hold.Day, hold.Month
	})
	if !ok {
		c.release(hold)
		return
	}
	c.seenBatch(t, o, resp.Body())
}

// endpointOfLines checks that a batch's endpoint is the url of its input
// file's lines (file, recorded at upload with their one surface): a lenient
// OpenAI-compatible server might run the lines under the endpoint, as
// requests of another surface than the one they were routed for. Else it
// answers 400 naming both and reports false.
func (c *call) endpointOfLines(endpoint, input string, file tenancy.Object) bool {
	lines, ok := surfaceNamed(file.Surface)
	switch {
	case !ok:
		c.badRequest("file " + strconv.Quote(input) + " holds no requests a batch can run")
		return false
	case endpoint == "":
		c.badRequest(`request body has no "endpoint"; the lines of file ` + strconv.Quote(input) + " are for " +
			strconv.Quote(surfaceURL(lines)))
		return false
	case endpoint != surfaceURL(lines):
		c.badRequest("endpoint " + strconv.Quote(endpoint) + " is not the url of the lines of file " + strconv.Quote(input) +
			", " + strconv.Quote(surfaceURL(lines)) + "; a batch runs its lines on the endpoint they were routed for")
		return false
	}
	return true
}

// release gives back a reservation whose batch was never created.
func (c *call) release(hold quota.BatchHold) {
	if p := c.st.Quota; p != nil && hold.Tokens > 0 {
		p.BatchSettle(c.caller.Key(), "", hold, nil, 0, c.s.clock())
	}
}

// createMessageBatch serves POST /v1/messages/batches: the body, spooled,
// must be {"requests": [...]}, each request {"custom_id", "params"} with
// params routed as a Messages request; the batch is created on a member
// of their one chain, each params.model rewritten by its model_map.
func (c *call) createMessageBatch() {
	c.op = "create"
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
	col := newCollector(lr, c.st, "requests")
	maxReq := c.st.MaxRequestBytes()
	ref, err := spoolRequests(c.body(), sp, maxReq+elemRoom, c.st.Config.Server.FileLimit(), func(i int, elem []byte, at int64) *hotpath.Refusal {
		params, off, err := parseRequest(elem)
		if err != nil {
			return col.refusal(i, fasthttp.StatusBadRequest, upstream.TypeInvalidRequest, upstream.CodeInvalidRequest, err.Error())
		}
		if len(params) > maxReq {
			return col.refusal(i, fasthttp.StatusRequestEntityTooLarge, upstream.TypeInvalidRequest, upstream.CodeRequestTooLarge,
				"params is over "+strconv.Itoa(maxReq)+" bytes (server.max_request_bytes)")
		}
		return col.add(i, router.SurfaceMessages, params, at+int64(off))
	})
	if err != nil {
		c.readFailed(err)
		return
	}
	c.model, c.rule = col.firstModel(), col.rule
	if ref != nil {
		c.rc.SetConnectionClose()
		c.refuse(ref)
		return
	}
	members, ref := col.members()
	if ref != nil {
		c.refuse(ref)
		return
	}
	if err := sp.finish(); err != nil {
		c.readFailed(err)
		return
	}
	// The create counts as a call and reserves the requests' estimate
	// once the body is known good.
	hold, ok := c.reserve(col.tokens)
	if !ok {
		return
	}
	resp := fasthttp.AcquireResponse()
	defer fasthttp.ReleaseResponse(resp)
	x := &exchange{method: fasthttp.MethodPost, path: func(*upstream.Target) string { return kindMessages.base },
		client: &c.rc.Request.Header,
		body: func(t *upstream.Target, req *fasthttp.Request) (int64, error) {
			repl := rewrites(t, col.models)
			n := rewrittenSize(sp.size, col.spans, repl)
			req.Header.SetContentType("application/json")
			req.SetBodyStream(newRewriter(sp.f, sp.size, col.spans, repl), int(n))
			return n, nil
		}}
	t := c.walk(members, x, resp)
	if t == nil {
		c.release(hold)
		return
	}
	o, ok := c.stored(t, resp, kindMessages, func(o *tenancy.Object) {
		col.record(o)
		o.Tokens, o.Day, o.Month = hold.Tokens, hold.Day, hold.Month
	})
	if !ok {
		c.release(hold)
		return
	}
	c.seenMessageBatch(t, o, resp.Body())
}

// elemRoom is what a message batch request may hold besides its params:
// its custom_id and the framing.
const elemRoom = 4 << 10

// parseRequest reads one element of a message batch's requests:
// {"custom_id": string, "params": object}, each once, nothing else. It
// returns params' bytes and where they start in elem.
func parseRequest(elem []byte) ([]byte, int, error) {
	var params []byte
	var seenID, seenParams bool
	err := hotpath.ObjectMembers(elem, func(key string, v []byte) error {
		switch key {
		case "custom_id":
			if seenID {
				return errors.New(`has "custom_id" twice`)
			}
			seenID = true
			if _, ok := hotpath.JSONString(v); !ok {
				return errors.New(`"custom_id" must be a string`)
			}
		case "params":
			if seenParams {
				return errors.New(`has "params" twice`)
			}
			seenParams = true
			if len(v) == 0 || v[0] != '{' {
				return errors.New(`"params" must be a JSON object`)
			}
			params = v
		default:
			return fmt.Errorf("has the key %q; a request has custom_id and params only", key)
		}
		return nil
	})
	switch {
	case err != nil:
		return nil, 0, err
	case !seenID:
		return nil, 0, errors.New(`has no "custom_id"`)
	case !seenParams:
		return nil, 0, errors.New(`has no "params"`)
	}
	return params, cap(elem) - cap(params), nil
}

package batch

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/valyala/fasthttp"

	"github.com/switchyard/switchyard/hotpath"
	"github.com/switchyard/switchyard/quota"
	"github.com/switchyard/switchyard/router"
	"github.com/switchyard/switchyard/tenancy"
	"github.com/switchyard/switchyard/upstream"
)

// The requests an upload describes: each line of a batch input file, or
// each element of a message batch's requests, is routed as the request it
// describes (hotpath.LineRouter), and all of them must route to one chain.
// The upload is then stored on a member of that chain that serves every
// request's model and surface and takes them in a batch.

// maxRequests is the most requests an upload may describe: the largest
// count any provider accepts in one batch (Azure OpenAI and Anthropic:
// 100,000; OpenAI: 50,000). It bounds what the gateway keeps per request
// (a model literal's place: 16 bytes).
const maxRequests = 100_000

// maxModels and maxModelBytes bound the distinct models an upload names
// and each one's length: the gateway keeps each distinct model, and an
// upload of 100,000 long, different model ids must not make it hold the
// file in memory. Real batches name one model, or a few.
const (
	maxModels     = 256
	maxModelBytes = 256
)

// lineSurfaces maps a batch line's url to its surface.
var lineSurfaces = map[string]router.Surface{
	"/v1/chat/completions": router.SurfaceChat,
	"/v1/completions":      router.SurfaceCompletions,
	"/v1/embeddings":       router.SurfaceEmbeddings,
	"/v1/responses":        router.SurfaceResponses,
}

// modelSpan is where one request's model literal lies in the spool.
type modelSpan struct {
	at    int64
	n     int32
	model int32 // index in collector.models
}

// collector routes an upload's requests one by one and keeps what its walk
// needs: the chain, which members can take every request, where each
// model literal lies (for the members' model_map) and the estimate.
type collector struct {
	lr   *hotpath.LineRouter
	st   *hotpath.State
	plan *quota.Plan
	// what names a request in messages: "line" or "requests".
	what string

	n       int
	rule    int
	chain   []int
	firstAt string         // names the first request, for a chain mismatch
	surface router.Surface // every request's
	// ok[i]: chain member i serves every request's model and surface and
	// takes them in a batch.
	ok      []bool
	seen    map[string]bool // "surface\x00model" pairs checked
	models  []string        // distinct models, in first-seen order
	modelIx map[string]int32
	mapped  []bool // mapped[m]: some chain member's model_map rewrites models[m]
	spans   []modelSpan
	tokens  int64
}

func newCollector(lr *hotpath.LineRouter, st *hotpath.State, what string) *collector {
	return &collector{lr: lr, st: st, plan: st.Quota, what: what, seen: map[string]bool{}, modelIx: map[string]int32{}}
}

// name names request i (0-based) in a message: "line 3" or "requests[2]".
func (c *collector) name(i int) string {
	if c.what == "line" {
		return "line " + strconv.Itoa(i+1)
	}
	return "requests[" + strconv.Itoa(i) + "]"
}

// refusal builds a Refusal for request i.
func (c *collector) refusal(i, status int, typ, code, msg string) *hotpath.Refusal {
	return &hotpath.Refusal{Status: status, Type: typ, Code: code, Message: c.name(i) + ": " + msg}
}

// add routes request i of surface s, whose body lies at bodyAt in the
// spool. A refusal names the request.
func (c *collector) add(i int, s router.Surface, body []byte, bodyAt int64) *hotpath.Refusal {
	if c.n >= maxRequests {
		return c.refusal(i, fasthttp.StatusBadRequest, upstream.TypeInvalidRequest, upstream.CodeInvalidRequest,
			fmt.Sprintf("an upload may hold at most %d requests (the most any provider takes in one batch)", maxRequests))
	}
	line, r := c.lr.Route(s, body)
	if r != nil {
		r.Message = c.name(i) + ": " + r.Message
		return r
	}
	if c.n == 0 {
		c.rule, c.chain, c.firstAt, c.surface = line.Rule, line.Chain, c.name(i), s
		c.ok = make([]bool, len(line.Chain))
		for j := range c.ok {
			c.ok[j] = true
		}
	} else if s != c.surface {
		// A batch runs one endpoint: its create names it, and each line
		// must be of it (docs/batches.md, The endpoint is the lines').
		return c.refusal(i, fasthttp.StatusBadRequest, upstream.TypeInvalidRequest, upstream.CodeInvalidRequest,
			fmt.Sprintf("its url is %s, but %s's is %s; a batch runs one endpoint, so every line of its file must name the same url",
				strconv.Quote(surfaceURL(s)), c.firstAt, strconv.Quote(surfaceURL(c.surface))))
	} else if !sameChain(c.chain, line.Chain) {
		return c.refusal(i, fasthttp.StatusBadRequest, upstream.TypeInvalidRequest, upstream.CodeInvalidRequest,
			fmt.Sprintf("routes to the chain %s, but %s routes to %s; every request of an upload must route to one chain",
				c.chainNames(line.Chain), c.firstAt, c.chainNames(c.chain)))
	}
	if len(line.Model) > maxModelBytes {
		return c.refusal(i, fasthttp.StatusBadRequest, upstream.TypeInvalidRequest, upstream.CodeInvalidRequest,
			fmt.Sprintf("its model id is over %d bytes", maxModelBytes))
	}
	if _, ok := c.modelIx[string(line.Model)]; !ok && len(c.models) >= maxModels {
		return c.refusal(i, fasthttp.StatusBadRequest, upstream.TypeInvalidRequest, upstream.CodeInvalidRequest,
			fmt.Sprintf("an upload may name at most %d different models", maxModels))
	}
	c.n++
	model := string(line.Model) // the LineRouter's buffer: copied once per distinct model below
	pair := strconv.Itoa(int(s)) + "\x00" + model
	if !c.seen[pair] {
		c.seen[pair] = true
		serves := false
		for j, t := range c.chain {
			m := c.st.Router.ServesModel(t, line.Model)
			if m && c.st.Router.ServesSurface(t, s) {
				serves = true
			}
			c.ok[j] = c.ok[j] && m && c.st.Router.ServesSurface(t, s) && c.st.Router.ServesBatch(t, s)
		}
		if !serves {
			return c.refusal(i, fasthttp.StatusNotFound, upstream.TypeInvalidRequest, upstream.CodeModelNotFound,
				"model "+strconv.Quote(model)+" is not served on "+surfaceName(s)+" by the targets this request routes to")
		}
	}
	ix, ok := c.modelIx[model]
	if !ok {
		ix = int32(len(c.models))
		c.modelIx[model] = ix
		c.models = append(c.models, model)
		mapped := false
		for _, t := range c.chain {
			if string(c.st.Targets[t].UpstreamModel(line.Model)) != model {
				mapped = true
			}
		}
		c.mapped = append(c.mapped, mapped)
	}
	if c.mapped[ix] {
		c.spans = append(c.spans, modelSpan{at: bodyAt + int64(line.ModelAt), n: int32(line.ModelEnd - line.ModelAt), model: ix})
	}
	c.tokens += c.plan.EstimateOf(body)
	return nil
}

// sameChain reports whether two chains name the same targets in order.
func sameChain(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// chainNames renders a chain as [a, b].
func (c *collector) chainNames(chain []int) string {
	names := make([]string, len(chain))
	for i, t := range chain {
		names[i] = c.st.Targets[t].Name
	}
	return "[" + strings.Join(names, ", ") + "]"
}

// members returns the chain members that can store the whole upload, in
// chain order; when none can, the refusal says why (404).
func (c *collector) members() ([]*upstream.Target, *hotpath.Refusal) {
	if c.n == 0 {
		return nil, &hotpath.Refusal{Status: fasthttp.StatusBadRequest, Type: upstream.TypeInvalidRequest,
			Code: upstream.CodeInvalidRequest, Message: "the upload holds no requests"}
	}
	var out []*upstream.Target
	for j, t := range c.chain {
		if c.ok[j] {
			out = append(out, c.st.Targets[t])
		}
	}
	if len(out) == 0 {
		return nil, &hotpath.Refusal{Status: fasthttp.StatusNotFound, Type: upstream.TypeInvalidRequest,
			Code: upstream.CodeUnsupportedEndpoint,
			Message: "no target of the chain " + c.chainNames(c.chain) + " stores a batch of these requests: each serves them " +
				"one by one, but none serves every request's model in a batch (OpenAI's Files and Batches on openai and azure v1 targets, " +
				"Anthropic's Message Batches on anthropic targets)"}
	}
	return out, nil
}

// record is the ownership record's view of what the upload holds.
func (c *collector) record(o *tenancy.Object) {
	o.Surface = surfaceName(c.surface)
	o.Models = c.models[:min(len(c.models), tenancy.MaxModels)]
	o.Tokens = c.tokens
}

// firstModel is the first request's model, for the call's record.
func (c *collector) firstModel() []byte {
	if len(c.models) == 0 {
		return nil
	}
	return []byte(c.models[0])
}

func surfaceName(s router.Surface) string { return s.String() }

// surfaceURL is the batch line url of surface s (lineSurfaces); the
// surface's name for one no line names.
func surfaceURL(s router.Surface) string {
	for u, ls := range lineSurfaces {
		if ls == s {
			return u
		}
	}
	return s.String()
}

// surfaceNamed is the line surface whose name (a record's Surface) is
// name; ok is false when none is.
func surfaceNamed(name string) (router.Surface, bool) {
	for _, s := range lineSurfaces {
		if s.String() == name {
			return s, true
		}
	}
	return 0, false
}

// parseLine reads one line of a batch input file: a JSON object with
// custom_id, method "POST", url (one of lineSurfaces) and body (an object),
// each once and nothing else. It returns the body's surface, its bytes and
// where they start in line.
func parseLine(line []byte) (router.Surface, []byte, int, error) {
	var (
		seen    [4]bool
		surface router.Surface
		body    []byte
	)
	err := hotpath.ObjectMembers(line, func(key string, v []byte) error {
		var slot int
		switch key {
		case "custom_id":
			slot = 0
			if _, ok := hotpath.JSONString(v); !ok {
				return fmt.Errorf(`"custom_id" must be a string`)
			}
		case "method":
			slot = 1
			if m, ok := hotpath.JSONString(v); !ok || m != "POST" {
				return fmt.Errorf(`"method" must be "POST"`)
			}
		case "url":
			slot = 2
			u, ok := hotpath.JSONString(v)
			s, known := lineSurfaces[u]
			if !ok || !known {
				return fmt.Errorf(`"url" %s is not one of /v1/chat/completions, /v1/completions, /v1/embeddings or /v1/responses`, quoteShort(v))
			}
			surface = s
		case "body":
			slot = 3
			if len(v) == 0 || v[0] != '{' {
				return fmt.Errorf(`"body" must be a JSON object`)
			}
			body = v
		default:
			return fmt.Errorf("has the key %s; a batch line has custom_id, method, url and body only", strconv.Quote(key))
		}
		if seen[slot] {
			return fmt.Errorf("has %q twice", key)
		}
		seen[slot] = true
		return nil
	})
	if err != nil {
		return 0, nil, 0, err
	}
	for i, k := range [...]string{"custom_id", "method", "url", "body"} {
		if !seen[i] {
			return 0, nil, 0, fmt.Errorf("has no %q", k)
		}
	}
	return surface, body, cap(line) - cap(body), nil
}

// quoteShort quotes a client's value for a message, cut short.
func quoteShort(v []byte) string {
	if len(v) > 80 {
		return string(v[:80]) + "…"
	}
	return string(v)
}

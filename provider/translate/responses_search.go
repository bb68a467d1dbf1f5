package translate

// The client's tool search (docs/providers.md, Responses API on every
// provider): Codex, on its tool-search models, defers its MCP tools behind
// a tool_search tool it executes itself ("execution":"client") and sends
// the tools a search loaded back in a tool_search_output item. The tool is
// a chat function (respToolSearchName), its calls tool calls, its outputs
// tool messages whose loaded tools join the request's tools.

import (
	"github.com/valyala/fastjson"

	"github.com/switchyard/switchyard/internal/byteconv"
	"github.com/switchyard/switchyard/internal/jsonw"
)

// respClientExecuted reports whether a tool_search tool or item says
// "execution":"client": the client runs the search (Codex does, over its
// MCP tools) and sends the tools it loads back in a tool_search_output.
func respClientExecuted(v *fastjson.Value) bool {
	e, _ := respStr(v.Get("execution"))
	return e == "client"
}

// respToolSearchSchema is the parameters of a client tool_search tool that
// gives none.
const respToolSearchSchema = `{"type":"object","properties":{"query":{"type":"string"}},"required":["query"]}`

// toolSearchTool writes a client-executed tool_search tool as a function
// (respToolSearchName) with its description and parameters.
func (r *respRequest) toolSearchTool(t *fastjson.Value, loc respToolLoc) error {
	desc, err := respOptString(t, "description", loc)
	if err != nil {
		return err
	}
	params := t.Get("parameters")
	if !respNull(params) && params.Type() != fastjson.TypeObject {
		return loc.err(".parameters must be an object")
	}
	start := len(r.dst)
	r.openTool(respToolSearch)
	if fresh, err := r.addTool(respToolSearch, loc); !fresh {
		r.dst = r.dst[:start]
		return err
	}
	if desc != "" {
		r.dst = appendRespKeyString(r.dst, "description", desc)
	}
	r.dst = append(r.dst, `,"parameters":`...)
	if respNull(params) {
		r.dst = append(r.dst, respToolSearchSchema...)
	} else {
		var ok bool
		if r.dst, r.scratch, ok = appendRespObject(r.dst, params, r.scratch); !ok {
			return loc.err(".parameters holds a number that is not JSON")
		}
	}
	r.dst = append(r.dst, "}}"...)
	return nil
}

// searchOutput writes a (client) tool_search_output as a tool message
// naming the tools it loaded, by their chat names; the tools themselves
// join the request's tools (toolsAndChoice).
func (r *respRequest) searchOutput(it *fastjson.Value, i int) error {
	callID, ok := respStr(it.Get("call_id"))
	if !ok || callID == "" {
		return respItemErr(i, ".call_id must be a non-empty string")
	}
	r.openMessage("tool")
	r.dst = append(r.dst, `"Tools loaded:`...)
	n := 0
	name := func(t respToolName) {
		if n > 0 {
			r.dst = append(r.dst, ',')
		}
		n++
		r.dst = append(r.dst, ' ')
		r.scratch = appendRespChatToolName(r.scratch[:0], t)
		r.dst = appendRespEscaped(r.dst, byteconv.String(r.scratch))
	}
	for _, t := range respArray(it.Get("tools")) { // checked by toolsAndChoice
		typ, _ := respStr(t.Get("type"))
		tn, _ := respStr(t.Get("name"))
		switch typ {
		case "function", "custom":
			name(respToolName{name: tn, custom: typ == "custom"})
		case "namespace":
			for _, sub := range respArray(t.Get("tools")) {
				styp, _ := respStr(sub.Get("type"))
				sn, _ := respStr(sub.Get("name"))
				if styp == "function" || styp == "custom" {
					name(respToolName{ns: tn, name: sn, custom: styp == "custom"})
				}
			}
		}
	}
	if n == 0 {
		r.dst = append(r.dst, " none"...)
	}
	r.dst = append(r.dst, `.","tool_call_id":`...)
	r.dst = jsonw.String(r.dst, callID)
	r.dst = append(r.dst, '}')
	return nil
}

// appendRespSearchArguments appends a tool search call's arguments: the
// object the model wrote, on one line ({} before any), or, when it wrote
// something else, that text as a string, so nothing it wrote is lost and
// the client reports the fault to it.
func appendRespSearchArguments(dst []byte, args string) []byte {
	if args == "" {
		return append(dst, "{}"...)
	}
	p := respParsers.Get()
	defer respParsers.Put(p)
	if v, err := p.Parse(args); err == nil && v.Type() == fastjson.TypeObject {
		n := len(dst)
		if out, _, ok := appendRespObject(dst, v, nil); ok {
			return out
		}
		dst = dst[:n]
	}
	return jsonw.String(dst, args)
}

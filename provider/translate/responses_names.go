package translate

import (
	"strings"

	"github.com/switchyard/switchyard/internal/byteconv"
)

// A chat tool call carries only a function name, and the answer translators
// see nothing of the request, so the chat name itself says what the
// Responses tool was (docs/providers.md, Responses API on every provider):
//
//	function "shell"                    → "shell"
//	function "create_issue" in "mcp__gh" → "mcp__gh--create_issue"
//	custom "apply_patch"                → "apply_patch--freeform"
//	custom "run" in "tools"             → "tools--run--freeform"
//	tool_search, executed by the client → "tool_search--client"
//
// "--" is legal in a tool name on every provider (Anthropic, Bedrock and
// Gemini take [A-Za-z0-9_-]) and rare in real ones, and a namespaced name
// is as long as Codex's own flattening ("mcp__gh__create_issue"). A tool
// whose name would read back differently is refused (400) rather than sent.
const (
	respNSSep        = "--"
	respCustomSuffix = "--freeform"
	// respToolSearchName stands for a tool_search tool the client executes
	// (Codex's, which loads its MCP tools); a namespace "tool_search"
	// holding a function "client", which would read back as it, is refused.
	respToolSearchName = "tool_search--client"
)

// respToolName is a Responses tool's identity: its namespace ("" for none),
// its name, and whether it is a custom (freeform) tool or the client's
// tool_search (name "tool_search").
type respToolName struct {
	ns, name       string
	custom, search bool
}

// respToolSearch is the identity of a client-executed tool_search tool.
var respToolSearch = respToolName{name: "tool_search", search: true}

// appendRespChatToolName appends the chat function name that stands for t.
func appendRespChatToolName(dst []byte, t respToolName) []byte {
	if t.search {
		return append(dst, respToolSearchName...)
	}
	if t.ns != "" {
		dst = append(dst, t.ns...)
		dst = append(dst, respNSSep...)
	}
	dst = append(dst, t.name...)
	if t.custom {
		dst = append(dst, respCustomSuffix...)
	}
	return dst
}

// appendRespChatToolNameJSON appends t's chat name as a JSON string.
func appendRespChatToolNameJSON(dst []byte, t respToolName) []byte {
	if t.search {
		return append(append(append(dst, '"'), respToolSearchName...), '"')
	}
	dst = append(dst, '"')
	if t.ns != "" {
		dst = appendRespEscaped(dst, t.ns)
		dst = append(dst, respNSSep...)
	}
	dst = appendRespEscaped(dst, t.name)
	if t.custom {
		dst = append(dst, respCustomSuffix...)
	}
	return append(dst, '"')
}

// parseRespChatToolName reads back a chat function name written by
// appendRespChatToolName. A name the gateway did not write reads as a plain
// function of that name.
func parseRespChatToolName(s string) respToolName {
	if s == respToolSearchName {
		return respToolSearch
	}
	var t respToolName
	if rest, ok := strings.CutSuffix(s, respCustomSuffix); ok && rest != "" {
		t.custom, s = true, rest
	}
	if ns, name, ok := strings.Cut(s, respNSSep); ok && ns != "" && name != "" {
		t.ns, s = ns, name
	}
	t.name = s
	return t
}

// roundTrips reports whether t's chat name reads back as t. scratch is
// reused for the name and returned.
func (t respToolName) roundTrips(scratch []byte) (bool, []byte) {
	scratch = appendRespChatToolName(scratch[:0], t)
	return parseRespChatToolName(byteconv.String(scratch)) == t, scratch
}

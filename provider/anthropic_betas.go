package provider

import (
	"bytes"

	"github.com/valyala/fastjson"

	"github.com/switchyard/switchyard/internal/byteconv"
)

// Claude on Bedrock and on Vertex accepts only some of the anthropic-beta
// flags a client of Anthropic's own API sends, and refuses a whole request
// naming one it does not know. Both Messages paths pass the client's flags
// through one betaFilter holding the target's anthropic_betas list
// (docs/providers.md, Claude Code on Bedrock; Claude Code on Vertex).

// BedrockAnthropicBetas are the anthropic-beta flags Bedrock's Claude
// documentation lists as accepted in anthropic_beta (the Amazon Bedrock
// user guide's Anthropic Claude Messages API request and response page, as
// of 2026-12-07; docs/providers.md, Claude Code on Bedrock): the default of
// a bedrock target's anthropic_betas. Every other flag is dropped, since
// Bedrock refuses a request naming one it does not know. The caller must
// not modify it.
var BedrockAnthropicBetas = []string{
	"computer-use-2025-01-24",
	"token-efficient-tools-2025-02-19",
	"interleaved-thinking-2025-05-14",
	"output-128k-2025-02-19",
	"dev-full-thinking-2025-05-14",
	"context-1m-2025-08-07",
	"context-management-2025-06-27",
	"effort-2025-11-24",
	"tool-search-tool-2025-10-19",
	"tool-examples-2025-10-29",
}

// VertexAnthropicBetas are the anthropic-beta flags Claude Code 2.1.197
// sends to Vertex in its own Vertex mode (as of 2026-12-07;
// docs/providers.md, Claude Code on Vertex): the default of a vertex
// target's anthropic_betas. Vertex publishes no list, and refuses a request
// naming a flag it does not know ("Unexpected value(s) … for the
// anthropic-beta header"). The caller must not modify it.
var VertexAnthropicBetas = []string{
	"claude-code-20250219",
	"interleaved-thinking-2025-05-14",
	"context-1m-2025-08-07",
	"context-management-2025-06-27",
	"web-search-2025-03-05",
	"effort-2025-11-24",
	"tool-search-tool-2025-10-19",
}

// VertexCountTokensBetas are the only flags Vertex's count-tokens endpoint
// is sent, of those the target accepts: the ones Claude Code sends there
// (docs/providers.md, Claude Code on Vertex). The caller must not modify it.
var VertexCountTokensBetas = []string{
	"claude-code-20250219",
	"interleaved-thinking-2025-05-14",
	"context-management-2025-06-27",
}

// MaxAnthropicBetas bounds a target's anthropic_betas: the filter remembers
// the flags it wrote in a 64-bit set.
const MaxAnthropicBetas = 64

// cloudBetaAliases are first-party beta flags that Bedrock and Vertex take
// under another name: the flag, then theirs (they agree: Anthropic's tool
// search page names the same flag for both). Claude Code sends the first
// when it believes it speaks to Anthropic and the second in its own Bedrock
// and Vertex modes.
var cloudBetaAliases = [...][2]string{
	// Tool search: defer_loading tools and tool_reference blocks.
	{"advanced-tool-use-2025-11-20", "tool-search-tool-2025-10-19"},
}

// anthropicBetas returns the beta flags ep passes to Claude: its own list,
// or def when it has none.
func (ep *Endpoint) anthropicBetas(def []string) []string {
	if ep.AnthropicBetas == nil {
		return def
	}
	return ep.AnthropicBetas
}

// betaFilter appends the anthropic-beta flags its allowed list holds (a
// first-party flag under the provider's name for it), each at most once,
// comma-separated: as JSON strings for an anthropic_beta array (Bedrock),
// or bare for an anthropic-beta header (Vertex). Not safe for concurrent
// use.
type betaFilter struct {
	allowed []string // the flags the target accepts
	only    []string // non-nil: a flag must be here too
	bare    bool     // write flags as they are, not as JSON strings
	seen    uint64   // bit i: allowed[i] written (i < MaxAnthropicBetas)
	n       int      // flags written
}

// appendList appends the flags of one anthropic-beta header value, a comma
// separated list (spaces and tabs around a flag are not part of it).
func (f *betaFilter) appendList(dst, list []byte) []byte {
	for len(list) > 0 {
		flag := list
		if i := bytes.IndexByte(list, ','); i >= 0 {
			flag, list = list[:i], list[i+1:]
		} else {
			list = nil
		}
		dst = f.appendFlag(dst, bytes.Trim(flag, " \t"))
	}
	return dst
}

// errBodyBetas refuses a body whose own anthropic_beta is not a list of flags.
var errBodyBetas = badRequest("anthropic_beta must be an array of strings")

// appendArray appends the flags of a body's own anthropic_beta value.
func (f *betaFilter) appendArray(dst, value []byte) ([]byte, error) {
	p := parserPool.Get()
	defer parserPool.Put(p)
	v, err := p.ParseBytes(value)
	if err != nil || v.Type() != fastjson.TypeArray {
		return dst, errBodyBetas
	}
	items, _ := v.Array()
	for _, it := range items {
		s, ok := jsonStr(it)
		if !ok {
			return dst, errBodyBetas
		}
		dst = f.appendFlag(dst, byteconv.Bytes(s))
	}
	return dst, nil
}

// appendFlag appends flag when allowed holds it, or else the provider's
// name for it when allowed holds that, unless only leaves it out or it was
// written already.
func (f *betaFilter) appendFlag(dst, flag []byte) []byte {
	i := flagIndex(f.allowed, flag)
	for _, a := range cloudBetaAliases {
		if i < 0 && a[0] == string(flag) {
			i = flagIndex(f.allowed, byteconv.Bytes(a[1]))
		}
	}
	if i < 0 || f.only != nil && flagIndex(f.only, byteconv.Bytes(f.allowed[i])) < 0 {
		return dst
	}
	if i < MaxAnthropicBetas {
		if f.seen&(1<<i) != 0 {
			return dst
		}
		f.seen |= 1 << i
	}
	if f.n > 0 {
		dst = append(dst, ',')
	}
	f.n++
	if f.bare {
		return append(dst, f.allowed[i]...)
	}
	return AppendJSONString(dst, f.allowed[i])
}

// flagIndex returns flag's position in list, or -1.
func flagIndex(list []string, flag []byte) int {
	for i, a := range list {
		if a == string(flag) {
			return i
		}
	}
	return -1
}

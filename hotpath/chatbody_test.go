package hotpath

import (
	"strconv"
	"strings"
)

// chatBody returns a realistic chat request body of about size bytes: a
// system prompt, three function tools with JSON schemas, then turns of a
// coding conversation (prose with escaped line breaks and quotes, code
// blocks, assistant tool calls whose arguments are escaped JSON, tool
// results) until the body reaches size, then "user", "stream" and
// sampling parameters. The benchmarks of the peek and of the handler use it.
func chatBody(size int) []byte {
	var b strings.Builder
	b.Grow(size + 4096)
	b.WriteString(`{"model":"gpt-4o","messages":[{"role":"system","content":"You are a careful coding assistant.\nAnswer in Markdown. When you quote code, say which file it is from.\nNever invent APIs."}`)
	tools := `,"tools":[{"type":"function","function":{"name":"read_file","description":"Read a file of the repository.","parameters":{"type":"object","properties":{"path":{"type":"string","description":"path from the root"},"offset":{"type":"integer","minimum":0}},"required":["path"]}}},` +
		`{"type":"function","function":{"name":"search","description":"Search the code by meaning.","parameters":{"type":"object","properties":{"query":{"type":"string"},"limit":{"type":"integer","default":10}},"required":["query"]}}},` +
		`{"type":"function","function":{"name":"run_tests","description":"Run a package's tests.","parameters":{"type":"object","properties":{"pkg":{"type":"string"},"race":{"type":"boolean"}},"required":["pkg"]}}}]`
	prose := "The gateway reads the request body once, routes on four fields, and forwards the bytes untouched. "
	code := `func (p *peek) parse(body []byte) error {\n\tif len(body) == 0 {\n\t\treturn errEmptyBody\n\t}\n\treturn p.scan(body)\n}\n`
	for i := 0; b.Len() < size-len(tools)-200; i++ {
		switch i % 4 {
		case 0:
			b.WriteString(`,{"role":"user","content":"` + strings.Repeat(prose, 6) + `Here is what I have in peek.go:\n\n` + "```go\\n" + strings.Repeat(code, 3) + "```" + `\nWhy does it say \"not valid JSON\" for turn ` + strconv.Itoa(i) + `?"}`)
		case 1:
			b.WriteString(`,{"role":"assistant","content":null,"tool_calls":[{"id":"call_` + strconv.Itoa(i) + `","type":"function","function":{"name":"read_file","arguments":"{\"path\":\"hotpath/peek.go\",\"offset\":` + strconv.Itoa(i*10) + `}"}}]}`)
		case 2:
			b.WriteString(`,{"role":"tool","tool_call_id":"call_` + strconv.Itoa(i-1) + `","content":"` + strings.Repeat(code, 8) + `"}`)
		case 3:
			b.WriteString(`,{"role":"assistant","content":"` + strings.Repeat(prose, 4) + `The error comes from the check of the trailing bytes.\n- first, the scan\n- then, the fields"}`)
		}
	}
	b.WriteString(`]` + tools + `,"tool_choice":"auto","user":"alice","stream":true,"temperature":0.2,"max_tokens":1024}`)
	return []byte(b.String())
}

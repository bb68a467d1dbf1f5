package translate

import (
	"fmt"
	"strings"
	"testing"
)

// The two request translators on the same conversation, so their costs
// compare, each written once as a Messages request and once as a
// Responses request: "tools", a coding session (a system prompt, three
// function tools with schemas, turns of prose and code with quotes, new
// lines and tabs, tool calls and their results) of about 1 KB, 16 KB and
// 100 KB; "plain", the conversation of the translation rows of
// bench/cmd/benchrun (string turns of prose and code) at 1 KB and 16 KB.
//
//	go test ./provider/translate -run '^$' -bench ConversationToChat -cpu 1 -count 5

// convShape says how a benchmark conversation is written.
type convShape int

const (
	convMessages convShape = iota
	convResponses
)

// convBody returns the conversation in shape, with as many turns as make
// its Messages form about size bytes.
func convBody(shape convShape, size int) []byte {
	turns := 1
	for len(convTurns(convMessages, turns)) < size {
		turns++
	}
	return convTurns(shape, turns)
}

// convTurns returns the conversation of n turns in shape.
func convTurns(shape convShape, n int) []byte {
	const system = `You are a careful coding assistant working in the user's repository.\nAnswer in Markdown; quote paths as \"a/b.go\".`
	prose := strings.Repeat("The gateway reads the request body once, routes on four fields, and forwards the bytes untouched. ", 3)
	code := `func route(b []byte) error {\n\tif len(b) == 0 {\n\t\treturn errEmpty\n\t}\n\treturn nil // \"ok\"\n}\n`
	tools := []string{"read_file", "edit_file", "run_tests"}
	schema := `{"type":"object","properties":{"path":{"type":"string","description":"The file's path, relative to the repository root"},` +
		`"limit":{"type":"integer","minimum":1,"maximum":2000}},"required":["path"],"additionalProperties":false}`
	var b strings.Builder
	if shape == convMessages {
		fmt.Fprintf(&b, `{"model":"bench-model","max_tokens":4096,"stream":true,"system":"%s","tools":[`, system)
		for i, t := range tools {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `{"name":%q,"description":"Runs %s on the user's machine. Use it when the task needs it; never guess a path.","input_schema":%s}`, t, t, schema)
		}
		b.WriteString(`],"messages":[`)
	} else {
		fmt.Fprintf(&b, `{"model":"bench-model","max_output_tokens":4096,"stream":true,"instructions":"%s","tools":[`, system)
		for i, t := range tools {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `{"type":"function","name":%q,"description":"Runs %s on the user's machine. Use it when the task needs it; never guess a path.","parameters":%s}`, t, t, schema)
		}
		b.WriteString(`],"input":[`)
	}
	for turn := 0; ; turn++ {
		if turn > 0 {
			b.WriteByte(',')
		}
		ask := fmt.Sprintf(`%sAs the operator said, \"pin it\" (turn %d).`, prose, turn)
		answer := fmt.Sprintf(`Let me read the file first; it holds %s`, `\"route\".`)
		id := fmt.Sprintf("call_%04d", turn)
		args := `{"path":"router/match.go","limit":200}`
		result := strings.Repeat(code, 2)
		if shape == convMessages {
			fmt.Fprintf(&b, `{"role":"user","content":"%s"},`, ask)
			fmt.Fprintf(&b, `{"role":"assistant","content":[{"type":"text","text":"%s"},{"type":"tool_use","id":%q,"name":"read_file","input":%s}]},`, answer, id, args)
			fmt.Fprintf(&b, `{"role":"user","content":[{"type":"tool_result","tool_use_id":%q,"content":"%s"}]}`, id, result)
		} else {
			fmt.Fprintf(&b, `{"role":"user","content":"%s"},`, ask)
			fmt.Fprintf(&b, `{"type":"message","role":"assistant","content":[{"type":"output_text","text":"%s"}]},`, answer)
			fmt.Fprintf(&b, `{"type":"function_call","call_id":%q,"name":"read_file","arguments":%q},`, id, args)
			fmt.Fprintf(&b, `{"type":"function_call_output","call_id":%q,"output":"%s"}`, id, result)
		}
		if turn == n-1 {
			break
		}
	}
	b.WriteString(`,{"role":"user","content":"Now run the tests."}]}`)
	return []byte(b.String())
}

// plainBody is the conversation of bench/cmd/benchrun's translation rows
// (translatedBody there) of about size bytes in shape.
func plainBody(shape convShape, size int) []byte {
	const system = `You are a careful coding assistant.\nAnswer in Markdown.`
	prose := "The gateway reads the request body once, routes on four fields, and forwards the bytes untouched. "
	code := `func route(b []byte) error {\n\tif len(b) == 0 {\n\t\treturn errEmpty\n\t}\n\treturn nil\n}\n`
	var turns []string
	for i, n := 0, 0; n < size-160; i++ {
		t := fmt.Sprintf(`%sAs the operator said, \"pin it\" (turn %d).\n%s`, strings.Repeat(prose, 4), i, strings.Repeat(code, 3))
		turns = append(turns, t)
		n += len(t) + 40
	}
	if len(turns)%2 == 0 { // end on a user turn
		turns = turns[:len(turns)-1]
	}
	var b strings.Builder
	if shape == convMessages {
		fmt.Fprintf(&b, `{"model":"bench-model","max_tokens":256,"system":"%s","messages":[`, system)
	} else {
		fmt.Fprintf(&b, `{"model":"bench-model","max_output_tokens":256,"instructions":"%s","input":[`, system)
	}
	for i, t := range turns {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"role":%q,"content":"%s"}`, [2]string{"user", "assistant"}[i%2], t)
	}
	b.WriteString("]}")
	return []byte(b.String())
}

func BenchmarkConversationToChat(b *testing.B) {
	o := Options{Model: []byte("gemini-2.5-pro"), Stream: true}
	for _, c := range []struct {
		kind string
		body func(convShape, int) []byte
		size int
	}{
		{"plain", plainBody, 1 << 10}, {"plain", plainBody, 16 << 10},
		{"tools", convBody, 1 << 10}, {"tools", convBody, 16 << 10}, {"tools", convBody, 100 << 10},
	} {
		for _, v := range []struct {
			name  string
			shape convShape
			fn    func(dst, body []byte, o Options) ([]byte, []string, error)
		}{
			{"messages", convMessages, MessagesToChat},
			{"responses", convResponses, ResponsesToChat},
		} {
			body := c.body(v.shape, c.size)
			b.Run(fmt.Sprintf("%s/%s/%dKB", c.kind, v.name, c.size>>10), func(b *testing.B) {
				b.ReportAllocs()
				b.SetBytes(int64(len(body)))
				var dst []byte
				for range b.N {
					var err error
					if dst, _, err = v.fn(dst[:0], body, o); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// TestConversationBodiesAgree: the benchmark's two shapes hold the same
// conversation, so their chat translations are the same chat request.
func TestConversationBodiesAgree(t *testing.T) {
	o := Options{Model: []byte("m")}
	for _, body := range []func(convShape, int) []byte{convBody, plainBody} {
		for _, size := range []int{1 << 10, 16 << 10} {
			m, _, err := MessagesToChat(nil, body(convMessages, size), o)
			if err != nil {
				t.Fatal(err)
			}
			r, _, err := ResponsesToChat(nil, body(convResponses, size), o)
			if err != nil {
				t.Fatal(err)
			}
			respJSONEqual(t, r, string(m))
		}
	}
}

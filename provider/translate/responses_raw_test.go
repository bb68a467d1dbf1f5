package translate

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestResponsesRawStringsStayJSON: every string the request translation
// copies stays that JSON string, copied as the client wrote it: the escapes
// \ud83d\ude00 and \/, which jsonw never writes, are still there. A string
// read before its copy would be re-quoted by strconv's rules (\x01,
// \U0001f600: not JSON) and the request would not decode.
func TestResponsesRawStringsStayJSON(t *testing.T) {
	const s = `a\u0001\"b\\c\u2028\ud83d\ude00\/d`
	want := "a\x01\"b\\c\u2028😀/d"
	in := `{"model":"m","instructions":"` + s + `","input":[` +
		`{"role":"user","content":"` + s + `"},` +
		`{"role":"user","content":[{"type":"input_text","text":"` + s + `"},{"type":"input_image","image_url":"` + s + `"}]},` +
		`{"role":"developer","content":[{"type":"input_text","text":"` + s + `"},{"type":"input_text","text":"` + s + `"}]},` +
		`{"role":"system","content":"` + s + `"},` +
		`{"role":"assistant","content":[{"type":"output_text","text":"` + s + `"},{"type":"refusal","refusal":"` + s + `"}]},` +
		`{"type":"function_call","call_id":"c1","name":"f","arguments":"` + s + `"},` +
		`{"type":"custom_tool_call","call_id":"c2","name":"p","input":"` + s + `"},` +
		`{"type":"function_call_output","call_id":"c1","output":"` + s + `"},` +
		`{"type":"function_call_output","call_id":"c2","output":[{"type":"input_text","text":"` + s + `"},{"type":"input_image","image_url":"` + s + `"}]},` +
		`{"role":"assistant","content":"` + s + `"}],` +
		`"tools":[{"type":"function","name":"f","description":"` + s + `","parameters":{"type":"object","description":"` + s + `","enum":["` + s + `"]}},` +
		`{"type":"custom","name":"p","description":"` + s + `","format":{"type":"grammar","syntax":"lark","definition":"` + s + `"}}],` +
		`"text":{"format":{"type":"json_schema","name":"n","description":"` + s + `","schema":{"title":"` + s + `"}}}}`
	out, _, err := ResponsesToChat(nil, []byte(in), Options{Model: []byte("m")})
	if err != nil {
		t.Fatal(err)
	}
	var req struct {
		Messages []struct {
			Content   json.RawMessage
			ToolCalls []struct {
				Function struct{ Arguments string }
			} `json:"tool_calls"`
		}
		Tools []struct {
			Function struct {
				Description string
				Parameters  struct {
					Description string
					Enum        []string
				}
			}
		}
		ResponseFormat struct {
			JSONSchema struct {
				Description string
				Schema      struct{ Title string }
			} `json:"json_schema"`
		} `json:"response_format"`
	}
	if err := json.Unmarshal(out, &req); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	text := func(i int) string {
		var c any
		if err := json.Unmarshal(req.Messages[i].Content, &c); err != nil {
			t.Fatal(err)
		}
		switch c := c.(type) {
		case string:
			return c
		case []any: // parts: their texts and image URLs, joined by |
			var parts []string
			for _, p := range c {
				p := p.(map[string]any)
				if u, ok := p["image_url"].(map[string]any); ok {
					parts = append(parts, u["url"].(string))
				} else {
					parts = append(parts, p["text"].(string))
				}
			}
			return strings.Join(parts, "|")
		}
		return ""
	}
	m := req.Messages
	for i, c := range []struct{ got, want string }{
		{text(0), want},                              // instructions
		{text(1), want},                              // a string content
		{text(2), want + "|" + want},                 // a text part, an image URL
		{text(3), want + "\n" + want},                // developer parts, joined
		{text(4), want},                              // system
		{text(5), want + want},                       // assistant text and refusal, joined
		{m[5].ToolCalls[0].Function.Arguments, want}, // arguments
		{m[5].ToolCalls[1].Function.Arguments, `{"input":"` + s + `"}`},
		{text(6), want}, // an output
		{text(7), want}, // output parts
		{text(8), want}, // an output's image, after the tool messages
		{text(9), want}, // the last assistant message
		{req.Tools[0].Function.Description, want},
		{req.Tools[0].Function.Parameters.Description, want},
		{req.Tools[0].Function.Parameters.Enum[0], want},
		{req.Tools[1].Function.Description, want + "\n\nThe input is freeform text, not JSON, and must match this lark grammar:\n" + want},
		{req.ResponseFormat.JSONSchema.Description, want},
		{req.ResponseFormat.JSONSchema.Schema.Title, want},
	} {
		if c.got != c.want {
			t.Errorf("string %d: %q, want %q", i, c.got, c.want)
		}
	}
	// Copied, not re-escaped: every one of them as the client wrote it
	// (but the custom input, escaped once more inside its arguments).
	if n := strings.Count(string(out), `\ud83d\ude00\/d`); n != 21 {
		t.Errorf("%d strings copied as sent, want 21:\n%s", n, out)
	}
}

package translate

// The tools: function and custom tools (also inside namespaces, and those
// added by additional_tools items and loaded by the client's tool search)
// become chat function tools, as does a tool_search the client executes;
// hosted tools a chat model cannot run are dropped and named.

import (
	"strconv"
	"strings"

	"github.com/valyala/fastjson"
)

// respToolLoc locates a tool for error messages: path[i], or path[i].tools[sub]
// inside a namespace (sub ≥ 0). Built into a string only on error.
type respToolLoc struct {
	path   string
	i, sub int
}

func (l respToolLoc) err(msg string) error {
	s := respAt(l.path, l.i)
	if l.sub >= 0 {
		s = respAt(s+".tools", l.sub)
	}
	return respInvalid(s + msg)
}

// toolsAndChoice writes tools, tool_choice and parallel_tool_calls; the
// last two only when a tool is left, since they mean nothing without one.
func (r *respRequest) toolsAndChoice(f *respFields) error {
	start := len(r.dst)
	r.dst = append(r.dst, `,"tools":[`...)
	if err := r.toolList(f.tools, "tools"); err != nil {
		return err
	}
	if in := f.input; r.additionalTools && in != nil && in.Type() == fastjson.TypeArray {
		items, _ := in.Array()
		for i, it := range items {
			typ, _ := respStr(it.Get("type"))
			if typ == "additional_tools" || typ == "tool_search_output" && respClientExecuted(it) {
				if err := r.toolList(it.Get("tools"), respAt("input", i)+".tools"); err != nil {
					return err
				}
			}
		}
	}
	if len(r.tools) == 0 {
		r.dst = r.dst[:start]
		return nil
	}
	r.dst = append(r.dst, ']')
	if err := r.toolChoice(f.toolChoice); err != nil {
		return err
	}
	if v := f.parallelToolCalls; !respNull(v) {
		if v.Type() != fastjson.TypeTrue && v.Type() != fastjson.TypeFalse {
			return respInvalid("parallel_tool_calls must be a boolean")
		}
		r.dst = append(r.dst, `,"parallel_tool_calls":`...)
		r.dst = v.MarshalTo(r.dst)
	}
	return nil
}

// toolList writes the function and custom tools of a tools array.
func (r *respRequest) toolList(v *fastjson.Value, path string) error {
	if respNull(v) {
		return nil
	}
	if v.Type() != fastjson.TypeArray {
		return respInvalid(path + " must be an array")
	}
	arr, _ := v.Array()
	for i, t := range arr {
		loc := respToolLoc{path: path, i: i, sub: -1}
		if t.Type() != fastjson.TypeObject {
			return loc.err(" must be an object")
		}
		typ, ok := respStr(t.Get("type"))
		if !ok {
			return loc.err(".type must be a string")
		}
		var err error
		switch typ {
		case "function":
			err = r.functionTool(t, "", loc)
		case "custom":
			err = r.customTool(t, "", loc)
		case "namespace":
			err = r.namespaceTool(t, loc)
		case "tool_search":
			if !respClientExecuted(t) {
				r.drop(typ) // OpenAI's own search over the request's deferred tools
				continue
			}
			err = r.toolSearchTool(t, loc)
		default:
			r.drop(typ)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// namespaceTool writes the function and custom tools of a namespace, each
// named for the namespace (responses_names.go).
func (r *respRequest) namespaceTool(t *fastjson.Value, loc respToolLoc) error {
	ns, ok := respStr(t.Get("name"))
	if !ok || ns == "" {
		return loc.err(".name must be a non-empty string")
	}
	tools := t.Get("tools")
	if tools == nil || tools.Type() != fastjson.TypeArray {
		return loc.err(".tools must be an array")
	}
	arr, _ := tools.Array()
	for j, sub := range arr {
		sl := loc
		sl.sub = j
		if sub.Type() != fastjson.TypeObject {
			return sl.err(" must be an object")
		}
		typ, ok := respStr(sub.Get("type"))
		if !ok {
			return sl.err(".type must be a string")
		}
		var err error
		switch typ {
		case "function":
			err = r.functionTool(sub, ns, sl)
		case "custom":
			err = r.customTool(sub, ns, sl)
		default:
			r.drop(typ)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// addTool checks t's name and records it; false means t was already
// written (a tool declared twice, e.g. again in additional_tools).
func (r *respRequest) addTool(t respToolName, loc respToolLoc) (bool, error) {
	var ok bool
	if ok, r.scratch = t.roundTrips(r.scratch); !ok {
		return false, loc.err(".name " + strconv.Quote(t.name) + ` cannot be sent to this model's provider: "` +
			respNSSep + `" in a namespace or a function name, a name ending in "` + respCustomSuffix + `", and "` + respToolSearchName + `" are reserved by the gateway`)
	}
	for _, seen := range r.tools {
		if seen == t {
			return false, nil
		}
	}
	r.tools = append(r.tools, t)
	return true, nil
}

// openTool starts writing tool t, up to its name: it is checked and
// recorded (addTool) once its other members are, and a tool declared
// twice is taken back.
func (r *respRequest) openTool(t respToolName) {
	if len(r.tools) > 0 {
		r.dst = append(r.dst, ',')
	}
	r.dst = append(r.dst, `{"type":"function","function":{"name":`...)
	r.dst = appendRespChatToolNameJSON(r.dst, t)
}

// respOptString returns an optional string member ("" when absent or null).
func respOptString(t *fastjson.Value, key string, loc respToolLoc) (string, error) {
	v := t.Get(key)
	if respNull(v) {
		return "", nil
	}
	s, ok := respStr(v)
	if !ok {
		return "", loc.err("." + key + " must be a string")
	}
	return s, nil
}

// functionTool writes a function tool: name, description, parameters and
// strict kept, the description and the parameters' strings as sent.
func (r *respRequest) functionTool(t *fastjson.Value, ns string, loc respToolLoc) error {
	name, ok := respStr(t.Get("name"))
	if !ok || name == "" {
		return loc.err(".name must be a non-empty string")
	}
	tn := respToolName{ns: ns, name: name}
	start := len(r.dst)
	r.openTool(tn)
	// An empty description is left out.
	descAt := len(r.dst)
	r.dst = append(r.dst, `,"description":`...)
	textAt := len(r.dst)
	switch out, k := appendStringOrNull(r.dst, t.Get("description")); {
	case k == rawOther:
		return loc.err(".description must be a string")
	case k == rawString && len(out)-textAt > len(`""`):
		r.dst = out
	default:
		r.dst = r.dst[:descAt]
	}
	params := t.Get("parameters")
	if !respNull(params) && params.Type() != fastjson.TypeObject {
		return loc.err(".parameters must be an object")
	}
	strict := t.Get("strict")
	if !respNull(strict) && strict.Type() != fastjson.TypeTrue && strict.Type() != fastjson.TypeFalse {
		return loc.err(".strict must be a boolean")
	}
	if fresh, err := r.addTool(tn, loc); !fresh {
		r.dst = r.dst[:start]
		return err
	}
	if !respNull(params) {
		r.dst = append(r.dst, `,"parameters":`...)
		var ok bool
		if r.dst, r.scratch, ok = appendRespObject(r.dst, params, r.scratch); !ok {
			return loc.err(".parameters holds a number that is not JSON")
		}
	}
	if !respNull(strict) {
		r.dst = append(r.dst, `,"strict":`...)
		r.dst = strict.MarshalTo(r.dst)
	}
	r.dst = append(r.dst, "}}"...)
	return nil
}

// respCustomInputSchema is the parameters of a custom tool's chat function:
// one string, the freeform input.
const respCustomInputSchema = `{"type":"object","properties":{"input":{"type":"string","description":"The tool's freeform input, passed to it verbatim."}},"required":["input"],"additionalProperties":false}`

// customTool writes a custom (freeform) tool as a function taking one
// string, input; a grammar the input must follow is added to the
// description, since a chat function cannot carry it.
func (r *respRequest) customTool(t *fastjson.Value, ns string, loc respToolLoc) error {
	name, ok := respStr(t.Get("name"))
	if !ok || name == "" {
		return loc.err(".name must be a non-empty string")
	}
	tn := respToolName{ns: ns, name: name, custom: true}
	start := len(r.dst)
	r.openTool(tn)
	// The description and the grammar are copied into one string as
	// they are checked; it is left out when both are empty.
	descAt := len(r.dst)
	r.dst = append(r.dst, `,"description":"`...)
	textAt := len(r.dst)
	var k int
	if r.dst, k = appendRawInnerOrNull(r.dst, t.Get("description")); k == rawOther {
		return loc.err(".description must be a string")
	}
	hasDesc := len(r.dst) > textAt
	if f := t.Get("format"); !respNull(f) {
		if f.Type() != fastjson.TypeObject {
			return loc.err(".format must be an object")
		}
		switch typ, _ := respStr(f.Get("type")); typ {
		case "text":
		case "grammar":
			syntax, err := respOptString(f, "syntax", loc)
			if err != nil {
				return err
			}
			grammarAt := len(r.dst)
			if hasDesc {
				r.dst = append(r.dst, `\n\n`...)
			}
			r.dst = append(r.dst, `The input is freeform text, not JSON, and must match this `...)
			r.dst = appendRespEscaped(r.dst, syntax)
			r.dst = append(r.dst, ` grammar:\n`...)
			defAt := len(r.dst)
			out, k := appendRawInnerOrNull(r.dst, f.Get("definition"))
			if k == rawOther {
				return loc.err(".definition must be a string")
			}
			if r.dst = out; len(r.dst) == defAt { // no definition: no grammar
				r.dst = r.dst[:grammarAt]
			}
		default:
			return loc.err(`.format.type must be "text" or "grammar"`)
		}
	}
	if len(r.dst) == textAt {
		r.dst = r.dst[:descAt]
	} else {
		r.dst = append(r.dst, '"')
	}
	if fresh, err := r.addTool(tn, loc); !fresh {
		r.dst = r.dst[:start]
		return err
	}
	r.dst = append(r.dst, `,"parameters":`...)
	r.dst = append(r.dst, respCustomInputSchema...)
	r.dst = append(r.dst, "}}"...)
	return nil
}

// drop records a tool type the chat form cannot carry, once.
func (r *respRequest) drop(typ string) {
	name := respDroppedName(typ)
	for _, d := range r.dropped {
		if d == name {
			return
		}
	}
	r.dropped = append(r.dropped, name)
}

// respHostedTools are the tool types a chat model cannot run: hosted by
// OpenAI (search, code, computer, images, MCP, tool search) or run by the
// client under OpenAI's own protocol (local_shell, shell, apply_patch).
var respHostedTools = [...]string{
	"web_search", "web_search_preview", "web_search_preview_2025_03_11", "web_search_2025_08_26",
	"file_search", "code_interpreter", "computer_use_preview", "computer", "image_generation", "mcp",
	"local_shell", "shell", "apply_patch", "tool_search", "programmatic_tool_calling",
}

// respDroppedName returns how a dropped tool type is reported: known types as
// the constants above, others as sent when they look like a type name, so a
// header never carries what a client wrote beyond [a-z0-9_.:-].
func respDroppedName(typ string) string {
	for _, t := range respHostedTools {
		if t == typ {
			return t
		}
	}
	if typ == "" || len(typ) > 64 {
		return "unknown"
	}
	for i := 0; i < len(typ); i++ {
		c := typ[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == ':' || c == '-') {
			return "unknown"
		}
	}
	return strings.Clone(typ)
}

// toolChoice writes tool_choice: auto, none and required as they are; a
// function or custom tool as the chat function standing for it;
// allowed_tools as its mode (or the one tool it allows when required); a
// hosted tool, which was dropped, not at all.
func (r *respRequest) toolChoice(v *fastjson.Value) error {
	if respNull(v) {
		return nil
	}
	if s, ok := respStr(v); ok {
		switch s {
		case "auto", "none", "required":
			r.dst = appendRespKeyString(r.dst, "tool_choice", s)
			return nil
		}
		return respInvalid(`tool_choice must be "auto", "none", "required" or an object`)
	}
	if v.Type() != fastjson.TypeObject {
		return respInvalid(`tool_choice must be "auto", "none", "required" or an object`)
	}
	typ, _ := respStr(v.Get("type"))
	switch typ {
	case "function", "custom":
		name, ok := respStr(v.Get("name"))
		if !ok || name == "" {
			return respInvalid("tool_choice.name must be a non-empty string")
		}
		t, _ := r.lookupTool(name, typ == "custom")
		r.functionChoice(t)
	case "allowed_tools":
		mode, _ := respStr(v.Get("mode"))
		if mode != "auto" && mode != "required" {
			return respInvalid(`tool_choice.mode must be "auto" or "required"`)
		}
		tools := v.Get("tools")
		if tools == nil || tools.Type() != fastjson.TypeArray {
			return respInvalid("tool_choice.tools must be an array")
		}
		arr, _ := tools.Array()
		n := 0
		var only respToolName
		for _, a := range arr {
			atyp, _ := respStr(a.Get("type"))
			name, _ := respStr(a.Get("name"))
			if atyp != "function" && atyp != "custom" || name == "" {
				continue
			}
			if t, ok := r.lookupTool(name, atyp == "custom"); ok {
				n++
				only = t
			}
		}
		switch {
		case n == 0: // only dropped tools allowed: the model may answer
		case n == 1 && mode == "required":
			r.functionChoice(only)
		default:
			r.dst = appendRespKeyString(r.dst, "tool_choice", mode)
		}
	}
	return nil
}

func (r *respRequest) functionChoice(t respToolName) {
	r.dst = append(r.dst, `,"tool_choice":{"type":"function","function":{"name":`...)
	r.dst = appendRespChatToolNameJSON(r.dst, t)
	r.dst = append(r.dst, "}}"...)
}

// lookupTool finds the written tool a tool_choice names: a top-level one
// first, then one inside a namespace (tool_choice names no namespace).
func (r *respRequest) lookupTool(name string, custom bool) (respToolName, bool) {
	for _, t := range r.tools {
		if t.ns == "" && t.name == name && t.custom == custom {
			return t, true
		}
	}
	for _, t := range r.tools {
		if t.name == name && t.custom == custom {
			return t, true
		}
	}
	return respToolName{name: name, custom: custom}, false
}

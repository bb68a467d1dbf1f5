package translate

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"
)

// A request built with openai-go's Responses param types (what the SDK
// puts on the wire) translates to a chat body that openai-go's own chat
// param types read back with the meaning of the request.
func TestResponsesToChatSDKParams(t *testing.T) {
	output := responses.ResponseInputItemParamOfFunctionCallOutput("a.go\nb.go")
	output.OfFunctionCallOutput.CallID = openai.String("call_1")
	nsCall := responses.ResponseInputItemParamOfFunctionCall(`{"title":"t"}`, "call_3", "create_issue")
	nsCall.OfFunctionCall.Namespace = openai.String("mcp__github")
	params := responses.ResponseNewParams{
		Model:        "gpt-5.1-codex",
		Instructions: openai.String("Be brief."),
		Input: responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{
			responses.ResponseInputItemParamOfMessage("List the files.", responses.EasyInputMessageRoleUser),
			responses.ResponseInputItemParamOfMessage(responses.ResponseInputMessageContentListParam{
				responses.ResponseInputContentParamOfInputText("Stay in the repo."),
			}, responses.EasyInputMessageRoleDeveloper),
			responses.ResponseInputItemParamOfReasoning("rs_1", nil),
			responses.ResponseInputItemParamOfFunctionCall(`{"command":"ls"}`, "call_1", "shell_command"),
			output,
			responses.ResponseInputItemParamOfCustomToolCall("call_2", "*** Begin Patch\n*** End Patch\n", "apply_patch"),
			responses.ResponseInputItemParamOfCustomToolCallOutput("call_2", "Done"),
			nsCall,
		}},
		Tools: []responses.ToolUnionParam{
			responses.ToolParamOfFunction("shell_command", map[string]any{
				"type": "object", "properties": map[string]any{"command": map[string]any{"type": "string"}}, "required": []string{"command"},
			}, false),
			{OfCustom: &responses.CustomToolParam{Name: "apply_patch", Description: openai.String("Edit files."),
				Format: shared.CustomToolInputFormatUnionParam{OfGrammar: &shared.CustomToolInputFormatGrammarParam{
					Definition: `start: "*** Begin Patch"`, Syntax: "lark"}}}},
			responses.ToolParamOfWebSearch(responses.WebSearchToolTypeWebSearch),
			responses.ToolParamOfFileSearch([]string{"vs_1"}),
			{OfNamespace: &responses.NamespaceToolParam{Name: "mcp__github", Description: "GitHub.", Tools: []responses.NamespaceToolToolUnionParam{
				{OfFunction: &responses.NamespaceToolToolFunctionParam{Name: "create_issue", Parameters: map[string]any{"type": "object"}}},
			}}},
		},
		ToolChoice:        responses.ResponseNewParamsToolChoiceUnion{OfToolChoiceMode: openai.Opt(responses.ToolChoiceOptionsRequired)},
		ParallelToolCalls: openai.Bool(false),
		MaxOutputTokens:   openai.Int(2048),
		Temperature:       openai.Float(0.3),
		TopP:              openai.Float(0.8),
		User:              openai.String("dev-7"),
		Store:             openai.Bool(false),
		PromptCacheKey:    openai.String("k"),
		Include:           []responses.ResponseIncludable{responses.ResponseIncludableReasoningEncryptedContent},
		Reasoning:         shared.ReasoningParam{Effort: shared.ReasoningEffortHigh, Summary: shared.ReasoningSummaryAuto},
		Text: responses.ResponseTextConfigParam{Format: responses.ResponseFormatTextConfigUnionParam{
			OfJSONSchema: &responses.ResponseFormatTextJSONSchemaConfigParam{Name: "files", Strict: openai.Bool(true),
				Schema: map[string]any{"type": "object", "properties": map[string]any{"files": map[string]any{"type": "array"}}}},
		}},
	}
	body, err := json.Marshal(params)
	if err != nil {
		t.Fatal(err)
	}
	out, dropped, err := ResponsesToChat(nil, body, Options{Model: []byte("claude-sonnet-4-5"), MaxCompletionTokens: true, Stream: true})
	if err != nil {
		t.Fatalf("%v\n%s", err, body)
	}
	if !reflect.DeepEqual(dropped, []string{"web_search", "file_search"}) {
		t.Fatalf("dropped %q", dropped)
	}

	var chat openai.ChatCompletionNewParams
	if err := json.Unmarshal(out, &chat); err != nil {
		t.Fatalf("openai-go cannot read the chat body: %v\n%s", err, out)
	}
	if chat.Model != "claude-sonnet-4-5" || chat.MaxCompletionTokens.Value != 2048 || chat.Temperature.Value != 0.3 ||
		chat.TopP.Value != 0.8 || chat.User.Value != "dev-7" || chat.ReasoningEffort != shared.ReasoningEffortHigh ||
		chat.ParallelToolCalls.Value || !chat.StreamOptions.IncludeUsage.Value {
		t.Fatalf("scalars %s", out)
	}
	if chat.ToolChoice.OfAuto.Value != "required" {
		t.Fatalf("tool_choice %s", out)
	}
	if js := chat.ResponseFormat.OfJSONSchema; js == nil || js.JSONSchema.Name != "files" || !js.JSONSchema.Strict.Value {
		t.Fatalf("response_format %s", out)
	}

	m := chat.Messages
	if len(m) != 8 {
		t.Fatalf("%d messages: %s", len(m), out)
	}
	if m[0].OfSystem == nil || m[0].OfSystem.Content.OfString.Value != "Be brief." ||
		m[1].OfUser == nil || m[1].OfUser.Content.OfString.Value != "List the files." ||
		m[2].OfSystem == nil || m[2].OfSystem.Content.OfString.Value != "Stay in the repo." {
		t.Fatalf("leading messages %s", out)
	}
	call := func(i int) openai.ChatCompletionMessageFunctionToolCallParam {
		if m[i].OfAssistant == nil || len(m[i].OfAssistant.ToolCalls) != 1 || m[i].OfAssistant.ToolCalls[0].OfFunction == nil {
			t.Fatalf("message %d is not one assistant tool call: %s", i, out)
		}
		return *m[i].OfAssistant.ToolCalls[0].OfFunction
	}
	if c := call(3); c.ID != "call_1" || c.Function.Name != "shell_command" || c.Function.Arguments != `{"command":"ls"}` {
		t.Fatalf("function call %+v", c)
	}
	if m[4].OfTool == nil || m[4].OfTool.ToolCallID != "call_1" || m[4].OfTool.Content.OfString.Value != "a.go\nb.go" {
		t.Fatalf("tool message %s", out)
	}
	if c := call(5); c.ID != "call_2" || c.Function.Name != "apply_patch--freeform" || c.Function.Arguments != `{"input":"*** Begin Patch\n*** End Patch\n"}` {
		t.Fatalf("custom call %+v", c)
	}
	if m[6].OfTool == nil || m[6].OfTool.ToolCallID != "call_2" || m[6].OfTool.Content.OfString.Value != "Done" {
		t.Fatalf("custom output %s", out)
	}
	if c := call(7); c.ID != "call_3" || c.Function.Name != "mcp__github--create_issue" {
		t.Fatalf("namespaced call %+v", c)
	}

	tools := chat.Tools
	if len(tools) != 3 {
		t.Fatalf("%d tools: %s", len(tools), out)
	}
	names := []string{tools[0].OfFunction.Function.Name, tools[1].OfFunction.Function.Name, tools[2].OfFunction.Function.Name}
	if !reflect.DeepEqual(names, []string{"shell_command", "apply_patch--freeform", "mcp__github--create_issue"}) ||
		tools[0].OfFunction.Function.Strict.Value || tools[0].OfFunction.Function.Parameters["required"] == nil {
		t.Fatalf("tools %q %s", names, out)
	}
	if p := tools[1].OfFunction.Function.Parameters; !reflect.DeepEqual(p["required"], []any{"input"}) {
		t.Fatalf("custom tool parameters %v", p)
	}
}

package translate

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
)

// A mid-conversation system message as the Anthropic SDK writes it
// (SystemMessageParam: text blocks) is a chat system message in its place.
func TestMessagesToChatSDKSystemMessage(t *testing.T) {
	params := anthropic.MessageNewParams{
		Model:     "claude-opus-4-8",
		MaxTokens: 100,
		System:    []anthropic.TextBlockParam{{Text: "You are Claude Code."}},
		Messages: []anthropic.MessageParam{
			anthropic.NewUserMessage(anthropic.NewTextBlock("What is in hello.txt?")),
			{OfSystem: &anthropic.SystemMessageParam{Content: []anthropic.TextBlockParam{{Text: "Agents: Explore."}, {Text: "Skills: none."}}}},
			anthropic.NewAssistantMessage(anthropic.NewTextBlock("Let me look.")),
		},
	}
	body, err := json.Marshal(params)
	if err != nil {
		t.Fatal(err)
	}
	out, _, err := MessagesToChat(nil, body, Options{Model: []byte("m")})
	if err != nil {
		t.Fatalf("MessagesToChat(%s): %v", body, err)
	}
	var chat struct {
		Messages []struct{ Role, Content string } `json:"messages"`
	}
	if err := json.Unmarshal(out, &chat); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	want := []struct{ Role, Content string }{
		{"system", "You are Claude Code."},
		{"user", "What is in hello.txt?"},
		{"system", "Agents: Explore.\n\nSkills: none."},
		{"assistant", "Let me look."},
	}
	if !reflect.DeepEqual(chat.Messages, want) {
		t.Errorf("chat messages %+v\n want %+v\n (request %s)", chat.Messages, want, body)
	}
}

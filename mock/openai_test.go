package mock

import (
	"context"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// TestOpenAIClientReadsMock checks the shapes against the official SDK: if the
// mock drifted from OpenAI's wire format the SDK would fail to decode it.
func TestOpenAIClientReadsMock(t *testing.T) {
	s := startMock(t, Options{Name: "sdk", StreamEvents: 3, ResponseBytes: 30, APIKey: "sk-test"})
	c := openai.NewClient(option.WithBaseURL(s.BaseURL()), option.WithAPIKey("sk-test"), option.WithMaxRetries(0))
	ctx := context.Background()
	params := openai.ChatCompletionNewParams{
		Model:    "gpt-4o",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
	}

	cc, err := c.Chat.Completions.New(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	if cc.Model != "gpt-4o" || !strings.Contains(cc.RawJSON(), `"system_fingerprint":"sdk"`) || len(cc.Choices[0].Message.Content) != 30 {
		t.Fatalf("completion %+v", cc)
	}

	st := c.Chat.Completions.NewStreaming(ctx, params)
	acc := openai.ChatCompletionAccumulator{}
	chunks := 0
	for st.Next() {
		acc.AddChunk(st.Current())
		chunks++
	}
	if err := st.Err(); err != nil {
		t.Fatal(err)
	}
	if chunks != 3 || len(acc.Choices) != 1 || len(acc.Choices[0].Message.Content) != 30 || acc.Choices[0].FinishReason != "stop" {
		t.Fatalf("stream: %d chunks, %+v", chunks, acc.Choices)
	}

	emb, err := c.Embeddings.New(ctx, openai.EmbeddingNewParams{
		Model: "text-embedding-3-small",
		Input: openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: []string{"a", "b"}},
	})
	if err != nil || len(emb.Data) != 2 {
		t.Fatalf("embeddings %v %+v", err, emb)
	}

	models, err := c.Models.List(ctx)
	if err != nil || len(models.Data) != 1 || models.Data[0].ID != "mock-model" {
		t.Fatalf("models %v %+v", err, models)
	}

	s.Fail(Failure{Status: 503, Count: 1})
	if _, err := c.Chat.Completions.New(ctx, params); err == nil {
		t.Fatal("injected 503 not reported by the SDK")
	}
}

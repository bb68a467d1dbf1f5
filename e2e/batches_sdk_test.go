package e2e

import (
	"bufio"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/openai/openai-go/v3"
)

// TestBatchesOpenAISDK runs a batch through the gateway with openai-go as
// the client, unmodified: Files.New, Batches.New, Get until completed,
// List, Files.Content of the output. The file is stored on the first
// member of gpt-4o's chain, the batch created there, and the output file
// becomes the batch owner's.
func TestBatchesOpenAISDK(t *testing.T) {
	e := newBatchEnv(t, batchOptions{})
	c := e.openai(batchAcmeKey)
	ctx := testCtx(t)
	lines := []string{chatLine("r1", "gpt-4o"), chatLine("r2", "gpt-4o"), chatLine("r3", "gpt-4o")}
	f, err := c.Files.New(ctx, openai.FileNewParams{
		File:    openai.File(strings.NewReader(strings.Join(lines, "\n")+"\n"), "nightly.jsonl", "application/jsonl"),
		Purpose: openai.FilePurposeBatch,
	})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(f.ID, "file-oai-") || f.Purpose != "batch" || f.Filename != "nightly.jsonl" {
		t.Fatalf("file = %+v; want one stored on oai", f)
	}
	if got := string(e.oai.File(f.ID)); got != strings.Join(lines, "\n")+"\n" {
		t.Fatalf("oai stored %q; want the upload as sent", got)
	}
	if e.oai2.BatchStats().Uploads != 0 {
		t.Fatal("the upload reached the chain's second member too")
	}
	if files := e.spoolFiles(t); len(files) != 0 {
		t.Fatalf("spool files left after the upload: %v", files)
	}

	b, err := c.Batches.New(ctx, openai.BatchNewParams{
		InputFileID:      f.ID,
		Endpoint:         openai.BatchNewParamsEndpointV1ChatCompletions,
		CompletionWindow: openai.BatchNewParamsCompletionWindow24h,
	})
	if err != nil {
		t.Fatal(err)
	}
	if b.InputFileID != f.ID || b.Status != openai.BatchStatusValidating {
		t.Fatalf("batch = %+v", b)
	}
	for i := 0; b.Status != openai.BatchStatusCompleted; i++ {
		if i > 10 {
			t.Fatalf("batch never completed: %+v", b)
		}
		if b, err = c.Batches.Get(ctx, b.ID); err != nil {
			t.Fatal(err)
		}
	}
	if b.RequestCounts.Completed != 3 || b.OutputFileID == "" || b.Usage.OutputTokens == 0 {
		t.Fatalf("completed batch = %+v", b)
	}
	page, err := c.Batches.List(ctx, openai.BatchListParams{})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Data) != 1 || page.Data[0].ID != b.ID || page.HasMore {
		t.Fatalf("batches list = %+v", page.Data)
	}
	files, err := c.Files.List(ctx, openai.FileListParams{})
	if err != nil {
		t.Fatal(err)
	}
	if len(files.Data) != 2 {
		t.Fatalf("files list has %d files; want the input and the output", len(files.Data))
	}
	out, err := c.Files.Content(ctx, b.OutputFileID)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Body.Close()
	n := 0
	sc := bufio.NewScanner(out.Body)
	for sc.Scan() {
		var l struct {
			CustomID string `json:"custom_id"`
			Response struct {
				Body struct {
					Model string `json:"model"`
				} `json:"body"`
			} `json:"response"`
		}
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil || l.Response.Body.Model != "gpt-4o" {
			t.Fatalf("output line %q: %v", sc.Bytes(), err)
		}
		n++
	}
	if n != 3 {
		t.Fatalf("output has %d lines; want 3", n)
	}
	// Cancel a second batch: cancelling, then cancelled.
	b2, err := c.Batches.New(ctx, openai.BatchNewParams{InputFileID: f.ID, Endpoint: openai.BatchNewParamsEndpointV1ChatCompletions,
		CompletionWindow: openai.BatchNewParamsCompletionWindow24h})
	if err != nil {
		t.Fatal(err)
	}
	if b2, err = c.Batches.Cancel(ctx, b2.ID); err != nil || b2.Status != openai.BatchStatusCancelling {
		t.Fatalf("cancel = %+v, %v", b2, err)
	}
	if b2, err = c.Batches.Get(ctx, b2.ID); err != nil || b2.Status != openai.BatchStatusCancelled {
		t.Fatalf("after cancel = %+v, %v", b2, err)
	}
	if del, err := c.Files.Delete(ctx, f.ID); err != nil || !del.Deleted {
		t.Fatalf("delete = %+v, %v", del, err)
	}
	if _, err := c.Files.Get(ctx, f.ID); err == nil || !strings.Contains(err.Error(), "404") {
		t.Fatalf("a deleted file is still readable: %v", err)
	}
}

// TestMessageBatchesAnthropicSDK runs a message batch through the gateway
// with anthropic-sdk-go as the client: New, Get, List, Results, Cancel,
// Delete. The batch's results_url points at the gateway.
func TestMessageBatchesAnthropicSDK(t *testing.T) {
	e := newBatchEnv(t, batchOptions{})
	c := e.anthropic(batchAcmeKey)
	ctx := testCtx(t)
	req := func(id string) anthropic.MessageBatchNewParamsRequest {
		return anthropic.MessageBatchNewParamsRequest{CustomID: id, Params: anthropic.MessageBatchNewParamsRequestParams{
			Model: "claude-sonnet-4-5", MaxTokens: 64,
			Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))}}}
	}
	b, err := c.Messages.Batches.New(ctx, anthropic.MessageBatchNewParams{Requests: []anthropic.MessageBatchNewParamsRequest{req("a"), req("b")}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(b.ID, "msgbatch_claude-") || b.ProcessingStatus != anthropic.MessageBatchProcessingStatusInProgress {
		t.Fatalf("batch = %+v; want one created on claude", b)
	}
	if got := e.claude.MessageBatchRequests(b.ID); len(got) != 2 {
		t.Fatalf("claude holds %d requests; want 2", len(got))
	}
	if b, err = c.Messages.Batches.Get(ctx, b.ID, anthropic.MessageBatchGetParams{}); err != nil ||
		b.ProcessingStatus != anthropic.MessageBatchProcessingStatusEnded {
		t.Fatalf("get = %+v, %v", b, err)
	}
	if want := e.base + "/v1/messages/batches/" + b.ID + "/results"; b.ResultsURL != want {
		t.Fatalf("results_url = %q; want the gateway's %q", b.ResultsURL, want)
	}
	page, err := c.Messages.Batches.List(ctx, anthropic.MessageBatchListParams{})
	if err != nil || len(page.Data) != 1 || page.Data[0].ID != b.ID || page.Data[0].ResultsURL != b.ResultsURL {
		t.Fatalf("list = %+v, %v", page, err)
	}
	stream := c.Messages.Batches.ResultsStreaming(ctx, b.ID, anthropic.MessageBatchResultsParams{})
	n := 0
	for stream.Next() {
		r := stream.Current()
		if r.Result.Type != "succeeded" || r.Result.Message.Model != "claude-sonnet-4-5" || r.Result.Message.Usage.OutputTokens == 0 {
			t.Fatalf("result = %+v", r)
		}
		n++
	}
	if err := stream.Err(); err != nil || n != 2 {
		t.Fatalf("results: %d, %v", n, err)
	}
	// Cancel a second one, then delete both.
	b2, err := c.Messages.Batches.New(ctx, anthropic.MessageBatchNewParams{Requests: []anthropic.MessageBatchNewParamsRequest{req("c")}})
	if err != nil {
		t.Fatal(err)
	}
	if b2, err = c.Messages.Batches.Cancel(ctx, b2.ID, anthropic.MessageBatchCancelParams{}); err != nil ||
		b2.ProcessingStatus != anthropic.MessageBatchProcessingStatusCanceling {
		t.Fatalf("cancel = %+v, %v", b2, err)
	}
	if _, err := c.Messages.Batches.Get(ctx, b2.ID, anthropic.MessageBatchGetParams{}); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{b.ID, b2.ID} {
		if d, err := c.Messages.Batches.Delete(ctx, id, anthropic.MessageBatchDeleteParams{}); err != nil || d.ID != id {
			t.Fatalf("delete %s = %+v, %v", id, d, err)
		}
	}
	if page, err := c.Messages.Batches.List(ctx, anthropic.MessageBatchListParams{}); err != nil || len(page.Data) != 0 {
		t.Fatalf("list after delete = %+v, %v", page, err)
	}
}

// TestBatchesAzureDataZone: the EU tenant's nightly batch is pinned to the
// Azure Data Zone deployment, each line's model rewritten to the
// deployment's name, and its batch runs there.
func TestBatchesAzureDataZone(t *testing.T) {
	e := newBatchEnv(t, batchOptions{})
	c := e.openai(batchEUKey)
	ctx := testCtx(t)
	lines := []string{chatLine("n1", "eu-model"), chatLine("n2", "eu-model", `,"max_tokens":100`)}
	f, err := c.Files.New(ctx, openai.FileNewParams{
		File:    openai.File(strings.NewReader(strings.Join(lines, "\n")), "eu.jsonl", "application/jsonl"),
		Purpose: openai.FilePurposeBatch,
	})
	if err != nil {
		t.Fatal(err)
	}
	stored := string(e.azure.Inner().File(f.ID))
	want := strings.ReplaceAll(strings.Join(lines, "\n"), `"model":"eu-model"`, `"model":"eu-gpt4o-datazone"`)
	if stored != want {
		t.Fatalf("azure stored\n%s\nwant\n%s", stored, want)
	}
	b, err := c.Batches.New(ctx, openai.BatchNewParams{InputFileID: f.ID, Endpoint: openai.BatchNewParamsEndpointV1ChatCompletions,
		CompletionWindow: openai.BatchNewParamsCompletionWindow24h})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; b.Status != openai.BatchStatusCompleted && i < 5; i++ {
		b, _ = c.Batches.Get(ctx, b.ID)
	}
	if b.Status != openai.BatchStatusCompleted {
		t.Fatalf("batch = %+v", b)
	}
	out, err := c.Files.Content(ctx, b.OutputFileID)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(out.Body)
	out.Body.Close()
	if !strings.Contains(string(body), `"model":"eu-gpt4o-datazone"`) {
		t.Fatalf("output %s", body)
	}
	if n := e.oai.BatchStats().Calls() + e.oai2.BatchStats().Calls() + e.us.BatchStats().Calls(); n != 0 {
		t.Fatalf("the EU tenant's batch reached %d calls outside azure-eu", n)
	}
}

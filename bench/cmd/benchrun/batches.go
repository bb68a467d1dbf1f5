package main

import (
	"context"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"strings"
	"sync/atomic"
	"time"
)

// Batch uploads (docs/batches.md): a 200 MiB batch file is streamed
// through Switchyard to the mock's Files API. The gateway spools it to
// disk while it routes every line and then streams it from the spool, so
// its resident memory should stay within a few tens of MiB of idle.

// batchFileBytes is the upload's size: server.max_batch_file_bytes'
// default, OpenAI's own limit.
const batchFileBytes = 200 << 20

// batchLines is the upload's line count, the most requests a provider
// takes in one batch; batchLineBytes each line's length: together just
// under batchFileBytes.
const (
	batchLines     = 100_000
	batchLineBytes = batchFileBytes / batchLines
)

// batchLine is line i of the upload, batchLineBytes long with its newline.
func batchLine(i int) []byte {
	head := fmt.Sprintf(`{"custom_id":"r%06d","method":"POST","url":"/v1/chat/completions","body":{"model":"bench-model","messages":[{"role":"user","content":"`, i)
	tail := `"}]}}` + "\n"
	return []byte(head + strings.Repeat("x", batchLineBytes-len(head)-len(tail)) + tail)
}

// batchUpload measures the Switchyard process's RSS while it takes a 200
// MiB upload.
func (b *bench) batchUpload() {
	if b.ctx.Err() != nil {
		return
	}
	b.method = append(b.method, fmt.Sprintf("Batch upload: POST /v1/files of a %d MiB batch file (%d lines of %d bytes, model bench-model, purpose batch) "+
		"streamed by the driver with its Content-Length, through Switchyard (defaults: spooled to the system's temporary directory) "+
		"to the mock's Files API; Switchyard's VmRSS sampled every 10 ms.", batchFileBytes>>20, batchLines, batchLineBytes))
	t := &table{head: []string{"process", "RSS idle", "RSS peak during the upload", "peak − idle", "upload time", "throughput", "status", "target: within a few tens of MiB"}}
	defer func() { b.sections = append(b.sections, "## Batch upload memory\n\n"+t.String()) }()
	p, err := b.switchyard(oneRule(b.primary.addr))
	if err != nil {
		t.add("Switchyard", "not measured: "+clip(firstLine(err.Error()), 80))
		return
	}
	defer p.stop()
	url := "http://" + p.addr + "/v1/files"
	// A small upload first, so buffers and pools exist before.
	if _, err := upload(b.ctx, url, 10); err != nil {
		t.add("Switchyard", "not measured: "+clip(firstLine(err.Error()), 80))
		return
	}
	time.Sleep(500 * time.Millisecond)
	idle := memStatus(p.pid(), "VmRSS")
	var peak atomic.Int64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			if r := memStatus(p.pid(), "VmRSS"); r > peak.Load() {
				peak.Store(r)
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	start := time.Now()
	status, err := upload(b.ctx, url, batchLines)
	took := time.Since(start)
	close(stop)
	<-sampled
	if err != nil {
		t.add("Switchyard", "not measured: "+clip(firstLine(err.Error()), 80))
		return
	}
	d := peak.Load() - idle
	t.add("Switchyard, 1 rule", mib(idle), mib(peak.Load()), mib(d), took.Round(time.Millisecond).String(),
		fmt.Sprintf("%.0f MiB/s", float64(batchLines*batchLineBytes)/(1<<20)/took.Seconds()), fmt.Sprint(status), passMiss(d <= 48<<20))
	b.log.Info().Str("idle", mib(idle)).Str("peak", mib(peak.Load())).Dur("took", took).Int("status", status).Msg("batch upload")
}

// upload streams a batch file of lines lines to url and returns the
// answer's status (200 expected).
func upload(ctx context.Context, url string, lines int) (int, error) {
	pr, pw := io.Pipe()
	w := multipart.NewWriter(pw)
	// The body's length, known in advance as an SDK sends it.
	var size int64
	{
		var head strings.Builder
		hw := multipart.NewWriter(&head)
		_ = hw.SetBoundary(w.Boundary())
		_ = hw.WriteField("purpose", "batch")
		_, _ = hw.CreateFormFile("file", "bench.jsonl")
		size = int64(head.Len()) + int64(lines*batchLineBytes) + int64(len("\r\n--"+w.Boundary()+"--\r\n"))
	}
	go func() {
		_ = w.WriteField("purpose", "batch")
		fw, err := w.CreateFormFile("file", "bench.jsonl")
		if err == nil {
			for i := 0; i < lines && err == nil; i++ {
				_, err = fw.Write(batchLine(i))
			}
		}
		if err == nil {
			err = w.Close()
		}
		pw.CloseWithError(err)
	}()
	req, err := http.NewRequestWithContext(ctx, "POST", url, pr)
	if err != nil {
		return 0, err
	}
	req.ContentLength = size
	req.Header.Set("Content-Type", w.FormDataContentType())
	req.Header.Set(authHeader[0][0], authHeader[0][1])
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		return resp.StatusCode, fmt.Errorf("upload answered %d: %s", resp.StatusCode, clip(string(body), 200))
	}
	return resp.StatusCode, nil
}

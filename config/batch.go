package config

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/goccy/go-yaml/ast"

	"github.com/switchyard/switchyard/provider"
	"github.com/switchyard/switchyard/router"
)

// Stored batches (docs/batches.md): the server keys that bound an upload
// and say how long the gateway remembers who owns a file or a batch.

// Batch defaults and bounds.
const (
	// DefaultMaxBatchFileBytes is OpenAI's own limit on a batch input file.
	DefaultMaxBatchFileBytes = 200 << 20
	// MinBatchFileBytes and MaxBatchFileBytes bound server.max_batch_file_bytes.
	MinBatchFileBytes = 1 << 10
	MaxBatchFileBytes = 4 << 30
	// DefaultSpoolFiles is server.max_spool_bytes by default, in files of
	// server.max_batch_file_bytes: four uploads of the largest size at once.
	DefaultSpoolFiles = 4
	// DefaultBatchRetention outlasts the providers' own: OpenAI keeps a
	// batch's files 30 days.
	DefaultBatchRetention = 35 * 24 * time.Hour
	// MinBatchRetention and MaxBatchRetention bound server.batch_retention.
	MinBatchRetention = time.Hour
	MaxBatchRetention = 400 * 24 * time.Hour
)

// BatchServer holds the server keys of the batch APIs; it is inline in
// Server (server.public_url, server.spool_dir, ...).
type BatchServer struct {
	// PublicURL is the gateway's URL as clients reach it
	// ("https://llm.example.com", no trailing slash after load), used in
	// the results_url of message batches. "" = the request's own scheme and
	// Host.
	PublicURL string `yaml:"public_url"`
	// SpoolDir is where uploads are spooled while their lines are checked.
	// "" = the system's temporary directory. Must exist.
	SpoolDir string `yaml:"spool_dir"`
	// MaxBatchFileBytes caps an uploaded batch file and a message batch's
	// body; larger ones get 413. Default 200 MiB.
	MaxBatchFileBytes int64 `yaml:"max_batch_file_bytes"`
	// MaxSpoolBytes caps the spool files of all uploads in flight
	// together; an upload that would pass it is 503 with Retry-After.
	// Default 4 × MaxBatchFileBytes; at least MaxBatchFileBytes.
	MaxSpoolBytes int64 `yaml:"max_spool_bytes"`
	// BatchRetention is how long the owner of a file or batch id is
	// remembered. Default 35 days.
	BatchRetention time.Duration `yaml:"batch_retention"`
	// UnknownFileIDs says what becomes of a request (with client keys)
	// whose body names a file id the gateway never recorded, such as one
	// the operator uploaded to the provider directly: "allow" (the
	// default; "" means it) forwards it, "refuse" answers 404
	// file_not_found. A file id another key owns is refused either way
	// (docs/residency.md).
	UnknownFileIDs string `yaml:"unknown_file_ids"`
}

// RefusesUnknownFileIDs reports whether unknown_file_ids is "refuse".
func (b *BatchServer) RefusesUnknownFileIDs() bool { return b.UnknownFileIDs == "refuse" }

// decodeBatchServer decodes the batch keys of the server block srv (the
// Config comes preset with presetBatchServer, so a key written as 0 is
// seen, and refused, as such).
func (d *decoder) decodeBatchServer(srv map[string]ast.Node, cfg *Config) {
	b := &cfg.Server.BatchServer
	d.setStr(srv, "server", "public_url", &b.PublicURL)
	d.setStr(srv, "server", "spool_dir", &b.SpoolDir)
	if v, ok := d.integer(srv["max_batch_file_bytes"], "server.max_batch_file_bytes"); ok {
		b.MaxBatchFileBytes = int64(v)
	}
	if v, ok := d.integer(srv["max_spool_bytes"], "server.max_spool_bytes"); ok {
		b.MaxSpoolBytes = int64(v)
	}
	d.setDuration(srv, "server", "batch_retention", &b.BatchRetention)
	d.setStr(srv, "server", "unknown_file_ids", &b.UnknownFileIDs)
}

// presetBatchServer is the batch keys' value before decoding: the
// defaults, and max_spool_bytes unset (-1: derived from
// max_batch_file_bytes once that is known).
var presetBatchServer = BatchServer{MaxBatchFileBytes: DefaultMaxBatchFileBytes, MaxSpoolBytes: -1,
	BatchRetention: DefaultBatchRetention}

// FileLimit is MaxBatchFileBytes, or its default when not set (a Config
// built by hand).
func (b *BatchServer) FileLimit() int64 {
	if b.MaxBatchFileBytes <= 0 {
		return DefaultMaxBatchFileBytes
	}
	return b.MaxBatchFileBytes
}

// SpoolLimit is MaxSpoolBytes, or its default when not set.
func (b *BatchServer) SpoolLimit() int64 {
	if b.MaxSpoolBytes <= 0 {
		return DefaultSpoolFiles * b.FileLimit()
	}
	return b.MaxSpoolBytes
}

// Retention is BatchRetention, or its default when not set.
func (b *BatchServer) Retention() time.Duration {
	if b.BatchRetention <= 0 {
		return DefaultBatchRetention
	}
	return b.BatchRetention
}

// validateBatchServer checks the batch keys of the server block.
func (d *decoder) validateBatchServer(cfg *Config) {
	b := &cfg.Server.BatchServer
	if b.MaxSpoolBytes == -1 {
		b.MaxSpoolBytes = DefaultSpoolFiles * b.MaxBatchFileBytes
	}
	b.PublicURL = strings.TrimRight(b.PublicURL, "/")
	if b.PublicURL != "" {
		u, err := url.Parse(b.PublicURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil ||
			u.RawQuery != "" || u.Fragment != "" {
			d.problemf("server.public_url", "%s is not an http(s) URL without user, query or fragment; want one such as \"https://llm.example.com\"",
				quoteShort(b.PublicURL))
		}
	}
	if b.SpoolDir != "" {
		if !filepath.IsAbs(b.SpoolDir) {
			d.problemf("server.spool_dir", "%s is not an absolute path; want a directory such as \"/var/spool/switchyard\"", quoteShort(b.SpoolDir))
		} else if st, err := os.Stat(b.SpoolDir); err != nil || !st.IsDir() {
			d.problemf("server.spool_dir", "%s is not an existing directory; create it, or leave spool_dir out for the system's temporary directory",
				quoteShort(b.SpoolDir))
		}
	}
	if v := b.MaxBatchFileBytes; v < MinBatchFileBytes || v > MaxBatchFileBytes {
		d.problemf("server.max_batch_file_bytes", "%d is out of range; want %d to %d bytes (default %d, 200 MiB)",
			v, MinBatchFileBytes, int64(MaxBatchFileBytes), DefaultMaxBatchFileBytes)
	} else if b.MaxSpoolBytes < b.MaxBatchFileBytes {
		d.problemf("server.max_spool_bytes", "%d is below server.max_batch_file_bytes (%d): no upload of the largest size could be spooled; want at least that",
			b.MaxSpoolBytes, b.MaxBatchFileBytes)
	}
	switch b.UnknownFileIDs {
	case "", "allow", "refuse":
	default:
		d.problemf("server.unknown_file_ids", "%s is not a choice; want allow (the default) or refuse", quoteShort(b.UnknownFileIDs))
	}
	if r := b.BatchRetention; r < MinBatchRetention || r > MaxBatchRetention {
		d.problemf("server.batch_retention", "%s is out of range; want %s to %s, such as \"840h\" (35 days)", r, MinBatchRetention, MaxBatchRetention)
	}
}

// BatchSurfaces returns the surfaces whose requests target t's stored
// batches hold: its provider's (provider.BatchSurfaces), none for an azure
// target on classic deployment URLs (only the v1 API has the Files and
// Batches APIs).
func (t *Target) BatchSurfaces() router.SurfaceSet {
	if t.Provider == ProviderAzure && t.AzureAPIVersion != "" {
		return 0
	}
	return provider.BatchSurfaces(t.Provider) & t.Surfaces()
}

// BatchWarnings returns the lint findings about stored batches (a
// `validate` warning, an error with -strict): with
// server.reduce_memory_usage the server reads every body whole before the
// handler runs, so uploads are held to server.max_request_bytes.
func (c *Config) BatchWarnings() []Problem {
	if !c.Server.ReduceMemoryUsage || int64(c.Server.MaxRequestBytes) >= c.Server.MaxBatchFileBytes {
		return nil
	}
	return []Problem{{File: c.File, Path: "server.reduce_memory_usage",
		Message: fmt.Sprintf("server.reduce_memory_usage reads every request body whole, so batch uploads are held to server.max_request_bytes (%d bytes), not server.max_batch_file_bytes (%d); turn it off on replicas that take uploads",
			c.Server.MaxRequestBytes, c.Server.MaxBatchFileBytes)}}
}

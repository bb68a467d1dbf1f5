package config

import (
	"time"

	"encoding/base64"
	"strings"

	"github.com/goccy/go-yaml/ast"
)

// Audit is the signed audit log block (docs/residency.md): one
// hash-chained JSON line per authenticated request and signed checkpoints.
type Audit struct {
	// Path is the log file; "" = no audit log (the block absent).
	Path string `yaml:"path"`
	// SigningKey is the Ed25519 private key from switchyard audit keygen
	// (base64). Required with Path. Secret: never logged.
	SigningKey string `yaml:"signing_key"`
	// CheckpointEvery is the longest time between signed checkpoints.
	// Default 10s; 100ms to 1h.
	CheckpointEvery time.Duration `yaml:"checkpoint_every"`
	// MaxFileBytes rotates the file once it is past this size; the next
	// file continues the chain. Default 1 GiB; at least 4096.
	MaxFileBytes int `yaml:"max_file_bytes"`
}

// Audit defaults and bounds.
const (
	DefaultAuditCheckpointEvery = 10 * time.Second
	DefaultAuditMaxFileBytes    = 1 << 30
	minAuditCheckpointEvery     = 100 * time.Millisecond
	maxAuditCheckpointEvery     = time.Hour
	minAuditFileBytes           = 4096
)

var auditKeys = []string{"path", "signing_key", "checkpoint_every", "max_file_bytes"}

func (d *decoder) decodeAudit(n ast.Node, cfg *Config) {
	if n == nil {
		return
	}
	m := d.fields(n, "audit", "audit", auditKeys...)
	cfg.Audit.CheckpointEvery = DefaultAuditCheckpointEvery
	cfg.Audit.MaxFileBytes = DefaultAuditMaxFileBytes
	d.setStr(m, "audit", "path", &cfg.Audit.Path)
	d.setStr(m, "audit", "signing_key", &cfg.Audit.SigningKey)
	d.setDuration(m, "audit", "checkpoint_every", &cfg.Audit.CheckpointEvery)
	d.setInt(m, "audit", "max_file_bytes", &cfg.Audit.MaxFileBytes)
}

func (d *decoder) validateAudit(cfg *Config) {
	if _, present := d.pos["audit"]; !present {
		return
	}
	a := &cfg.Audit
	if a.Path == "" && !d.decodeBad["audit.path"] {
		d.problemf("audit.path", "path is required; want the audit log file, or no audit block")
	}
	switch {
	case d.decodeBad["audit.signing_key"]:
	case a.SigningKey == "":
		d.problemf("audit.signing_key", "signing_key is required; want the private key switchyard audit keygen prints (usually ${AUDIT_SIGNING_KEY})")
	default:
		// The format of audit.ParsePrivateKey (which imports this
		// package's dependents, so it cannot be called here).
		if b, err := base64.StdEncoding.DecodeString(strings.TrimSpace(a.SigningKey)); err != nil {
			d.problemf("audit.signing_key", "signing_key is not base64; want the private key switchyard audit keygen prints")
		} else if len(b) != 32 && len(b) != 64 {
			d.problemf("audit.signing_key", "signing_key: %d bytes after base64; want the 32-byte key switchyard audit keygen prints", len(b))
		}
	}
	if !d.decodeBad["audit.checkpoint_every"] && (a.CheckpointEvery < minAuditCheckpointEvery || a.CheckpointEvery > maxAuditCheckpointEvery) {
		d.problemf("audit.checkpoint_every", "%s is out of range; want %s to %s, such as 10s", a.CheckpointEvery, minAuditCheckpointEvery, maxAuditCheckpointEvery)
	}
	d.intRange("audit.max_file_bytes", a.MaxFileBytes, minAuditFileBytes, -1)
}

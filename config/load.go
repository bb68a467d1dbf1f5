package config

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/lexer"
	"github.com/goccy/go-yaml/parser"
	"github.com/goccy/go-yaml/token"
)

// Defaults (docs/configuration.md, Configuration reference).
const (
	DefaultListen          = "127.0.0.1:8080"
	DefaultMaxRequestBytes = 10 << 20
	DefaultRequestTimeout  = 300 * time.Second
	DefaultShutdownTimeout = 30 * time.Second
	// DefaultWebSocketMessageBytes and DefaultWebSocketIdle are
	// server.websocket's defaults; the Min and Max bound them.
	DefaultWebSocketMessageBytes = 16 << 20
	DefaultWebSocketIdle         = 5 * time.Minute
	MinWebSocketMessageBytes     = 1 << 10
	MaxWebSocketMessageBytes     = 1 << 30
	MinWebSocketIdle             = time.Second
	MaxWebSocketIdle             = 24 * time.Hour
	// MaxDrainDelay bounds server.drain_delay: load balancers notice a
	// failing readiness check within seconds; minutes of delay only hold
	// a rollout up.
	MaxDrainDelay = 5 * time.Minute
	// MinConfigWatch and MaxConfigWatch bound a non-zero
	// server.config_watch: each check reads and hashes the whole file.
	MinConfigWatch          = 100 * time.Millisecond
	MaxConfigWatch          = time.Hour
	DefaultLogLevel         = "info"
	DefaultLogFormat        = "json"
	DefaultTargetTimeout    = 60 * time.Second
	DefaultRetryAttempts    = 1
	DefaultInitialBackoffMs = 100
	DefaultFailureThreshold = 5
	DefaultSuccessThreshold = 1
	DefaultMaxHalfThreshold = 1
	DefaultBreakerTimeout   = 30 * time.Second
	DefaultMaxConcurrency   = 256
	DefaultQueueSize        = 1000
)

// Input limits, checked before the YAML parser runs. go-yaml's parse costs
// memory in proportion to the file's size (up to ~400 bytes per byte of
// dense YAML such as "[a,a,a,…]") and, worse, quadratic in nesting depth:
// it builds every node's path string from its parent's, so 50,000 nested
// "[" (a 100 KB file) took 3.8 GB and 2.6 s, and a few hundred KB can get
// the process killed at start, on validate or on reload.
const (
	// MaxFileBytes is the largest file Load and Parse accept: 4 MiB, six
	// times a 10,000-rule file (~680 KB) and more than the largest file the
	// decoder's 200,000-value budget lets through in that style (49,000
	// rules, 3.3 MB). At worst (two million one-letter list items) a file
	// this size took 1.6 GB and 3.3 s to parse.
	MaxFileBytes = 4 << 20
	// MaxNesting is the deepest nesting of lists and mappings accepted,
	// flow ([ ], { }) and block (indented or "- - x") levels together. The
	// schema's deepest value, targets[i].retry.on_status_codes[j], is 5
	// levels down; 64 levels cost the parser nothing noticeable.
	MaxNesting = 64
)

// Load reads the file at path and parses it with Parse, taking environment
// variables from the process environment. It reads at most MaxFileBytes+1
// bytes, so a huge file is refused without being read whole. An I/O error
// is returned as is; a configuration problem is an *Error.
func Load(path string) (*Config, error) {
	data, err := ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(path, data, os.LookupEnv)
}

// ReadFile reads a configuration file for Parse: at most MaxFileBytes+1
// bytes, enough for Parse to refuse a file over the limit without the
// whole of a huge file in memory.
func ReadFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
}

// Parse decodes, interpolates, defaults and validates one configuration.
// A file over MaxFileBytes, or nesting lists and mappings deeper than
// MaxNesting, is refused with one problem before the YAML parser runs.
// file is used only in problem locations and Config.File. lookupEnv resolves
// ${VAR} references and the <PROVIDER>_BASE_URL / <PROVIDER>_API_KEY
// defaults; nil means no variable is set.
//
// On any problem Parse returns a nil *Config and an *Error holding every
// problem found, sorted by line. It never panics on any input. Parse is safe
// for concurrent use when lookupEnv is.
//
// A file of at least ReleaseMemoryBytes ends with debug.FreeOSMemory, so
// the parse's transient heap is not kept as resident memory (docs/design.md).
func Parse(file string, data []byte, lookupEnv func(string) (string, bool)) (*Config, error) {
	cfg, err := parse(file, data, lookupEnv)
	if len(data) >= ReleaseMemoryBytes {
		// parse's syntax tree and decoder state are unreachable now.
		debug.FreeOSMemory()
	}
	return cfg, err
}

// ReleaseMemoryBytes is the file size from which Parse returns the memory
// parsing used to the operating system before it returns (see Parse).
const ReleaseMemoryBytes = 64 << 10

func parse(file string, data []byte, lookupEnv func(string) (string, bool)) (*Config, error) {
	return parseOpt(file, data, lookupEnv, false)
}

func parseOpt(file string, data []byte, lookupEnv func(string) (string, bool), unproven bool) (*Config, error) {
	if len(data) > MaxFileBytes {
		return nil, &Error{Problems: []Problem{{File: file, Line: 1, Col: 1,
			Message: fmt.Sprintf("the file is larger than %d MiB (%d bytes); want a smaller config (10,000 rules take about 680 KB)", MaxFileBytes>>20, MaxFileBytes)}}}
	}
	if lookupEnv == nil {
		lookupEnv = func(string) (string, bool) { return "", false }
	}
	sum := sha256.Sum256(data)
	d := &decoder{
		file:      file,
		lookup:    lookupEnv,
		pos:       map[string]pos{},
		has:       map[string]bool{},
		anchors:   map[string]ast.Node{},
		decodeBad: map[string]bool{},
		root:      pos{1, 1},
		budget:    maxValues,
		unproven:  unproven,
	}
	// Duplicate keys are detected per mapping by the decoder, which reports
	// them all with both lines; the parser would stop at the first. A UTF-8
	// byte order mark (some Windows editors write one) is not part of the
	// first key.
	src := bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	// parser.ParseBytes is Tokenize then Parse. The lexer is linear; the
	// depth check runs on its tokens, so whatever it reads as a quoted
	// string, comment or block scalar is never taken for structure, and
	// the parser proper (quadratic in depth) never sees a deep file.
	tokens := lexer.Tokenize(string(src))
	if at, path, deep := tooDeep(tokens); deep {
		return nil, &Error{Problems: []Problem{{File: file, Line: at.line, Col: at.col, Path: path,
			Message: fmt.Sprintf("lists and mappings nested deeper than %d levels; want at most %d (the deepest value a config has, targets[i].retry.on_status_codes[j], is 5 levels down)", MaxNesting, MaxNesting)}}}
	}
	f, err := parser.Parse(tokens, 0, parser.AllowDuplicateMapKey())
	if err != nil {
		return nil, &Error{Problems: []Problem{syntaxProblem(file, err)}}
	}
	var body ast.Node
	for i, doc := range f.Docs {
		if doc == nil || doc.Body == nil {
			continue
		}
		if body != nil {
			p := nodePos(doc.Body)
			d.addAt(p, "", "a second YAML document (document %d); want one document per config file", i+1)
			continue
		}
		body = doc.Body
		d.collectAnchors(body)
		if p := nodePos(body); p.line > 0 {
			d.root = p
		}
	}
	cfg := d.decodeConfig(body)
	d.semantic = true
	// Phases 3 and 4 run even after decode problems so one run reports as
	// much as possible; values phase 1 refused are not reported again.
	d.applyTargetDefaults(cfg)
	d.validate(cfg)
	if len(d.probs) > 0 {
		return nil, &Error{Problems: sortProblems(d.probs)}
	}
	cfg.File = file
	cfg.Hash = hex.EncodeToString(sum[:])
	return cfg, nil
}

// blockLevel is one open block collection: a sequence whose entries'
// "-" stand at column col, or a mapping whose keys start there.
type blockLevel struct {
	col int
	seq bool
}

// flowLevel is one open flow collection and the ":" in its current entry:
// "[a: b]" is a list holding a one-pair mapping, "{a: b: c}" a mapping
// whose value is one, so each ":" but a mapping entry's first is a level.
type flowLevel struct {
	mapping bool
	colons  int
}

func (f flowLevel) extra() int {
	if f.mapping {
		return max(f.colons-1, 0)
	}
	return f.colons
}

// tooDeep reports whether lists and mappings nest deeper than MaxNesting
// and, if so, where the first level too many starts (a "[", "{", "-", "?",
// a key, or a flow entry's ":") and the top-level key it is under when
// that is one of the config's sections (else ""). It is linear in the
// tokens and allocates nothing.
//
// Flow levels are counted by their brackets and colons. Block levels are
// counted by column, as YAML nests them: a "-" or a key opens a level
// unless one at its column is already open (the same sequence or mapping),
// and closes every level to its right; a sequence may sit at its parent
// key's column ("key:\n- x"), so a "-" at a key's column opens a level
// too. Whatever the lexer took for a quoted string, comment or block
// scalar is one token and never counts.
func tooDeep(tokens token.Tokens) (at pos, path string, deep bool) {
	var (
		block [MaxNesting + 1]blockLevel
		n     int // open block levels
		flow  [MaxNesting + 1]flowLevel
		nf    int // open flow collections
		depth int // n + nf + the flow levels' extra()
		line  int // line of the last token outside flow collections
		start int // column where the current block node began; 0: none yet
		top   string
		prev  *token.Token
	)
	for _, tk := range tokens {
		p := tk.Position
		if p == nil || tk.Type == token.CommentType {
			continue
		}
		switch tk.Type {
		case token.DocumentHeaderType, token.DocumentEndType:
			n, nf, depth, start, top = 0, 0, 0, 0, ""
			continue
		case token.SequenceStartType, token.MappingStartType:
			if nf == 0 && (p.Line != line || start == 0) {
				line, start = p.Line, p.Column
			}
			if depth+1 > MaxNesting {
				return pos{p.Line, p.Column}, top, true
			}
			flow[nf] = flowLevel{mapping: tk.Type == token.MappingStartType}
			nf++
			depth++
			continue
		case token.SequenceEndType, token.MappingEndType:
			if nf > 0 {
				nf--
				depth -= 1 + flow[nf].extra()
			}
			prev = tk
			continue
		}
		if nf > 0 {
			f := &flow[nf-1]
			switch tk.Type {
			case token.CollectEntryType:
				depth -= f.extra()
				f.colons = 0
			case token.MappingValueType:
				depth -= f.extra()
				f.colons++
				depth += f.extra()
				if depth > MaxNesting {
					return pos{p.Line, p.Column}, top, true
				}
			}
			continue
		}
		if p.Line != line {
			line, start = p.Line, 0
		}
		col := p.Column
		switch tk.Type {
		case token.SequenceEntryType:
			// Close deeper levels and a sibling entry's; a mapping whose
			// key stands at this column holds the new sequence.
			for n > 0 && (block[n-1].col > col || block[n-1].col == col && block[n-1].seq) {
				n--
				depth--
			}
			block[n] = blockLevel{col, true}
			n++
			depth++
			start = 0
		case token.MappingKeyType, token.MappingValueType:
			if tk.Type == token.MappingValueType && start != 0 {
				col = start // the key's column
			}
			// Close deeper levels and a sequence at the key's column (it
			// was this mapping's value); stay in a mapping already open here.
			for n > 0 && (block[n-1].col > col || block[n-1].col == col && block[n-1].seq) {
				n--
				depth--
			}
			if n == 0 || block[n-1].col != col {
				block[n] = blockLevel{col, false}
				n++
				depth++
			}
			if n == 1 && tk.Type == token.MappingValueType {
				top = ""
				if prev != nil && slices.Contains(topKeys, prev.Value) {
					top = prev.Value
				}
			}
			start = 0
		default:
			if start == 0 {
				start = col
			}
		}
		prev = tk
		if depth > MaxNesting {
			return pos{p.Line, col}, top, true
		}
	}
	return pos{}, "", false
}

func syntaxProblem(file string, err error) Problem {
	p := Problem{File: file}
	// Not err.Error() for a yaml.Error: it prints an excerpt of the source
	// in time quadratic in the tokens on the line (10 s for one 300 KB
	// line), and the message is all a problem needs.
	var ye yaml.Error
	if errors.As(err, &ye) {
		p.Message = "YAML syntax error: " + ye.GetMessage()
		if tk := ye.GetToken(); tk != nil && tk.Position != nil {
			p.Line, p.Col = tk.Position.Line, tk.Position.Column
		}
	} else {
		p.Message = "YAML syntax error: " + err.Error()
	}
	if p.Line < 1 {
		p.Line, p.Col = 1, 1
	}
	// One problem, one line: validate prints them that way.
	p.Message = strings.Join(strings.Fields(p.Message), " ")
	return p
}

var (
	topKeys    = []string{"server", "log", "strategy", "targets", "auth", "quotas", "audit", "admin", "tracing"}
	serverKeys = []string{"listen", "max_request_bytes", "request_timeout", "shutdown_timeout", "drain_delay", "config_watch",
		"reduce_memory_usage", "allowed_hosts", "allowed_origins", "websocket",
		"public_url", "spool_dir", "max_batch_file_bytes", "max_spool_bytes", "batch_retention", "unknown_file_ids"}
	websocketKeys = []string{"max_message_bytes", "idle_timeout"}
	logKeys       = []string{"level", "format", "access_log"}
	strategyKeys  = []string{"mode", "conditions"}
	conditionKeys = []string{"key", "field", "value", "target_key", "target_keys"}
	targetKeys    = []string{"virtual_key", "provider", "base_url", "api_key", "region",
		"aws_access_key_id", "aws_secret_access_key", "aws_session_token", "anthropic_betas",
		"models", "model_map", "timeout", "retry", "circuit_breaker", "concurrency", "limits", "prices", "residency",
		"batch_prices"}
	targetKeysAll   = append(slices.Clone(targetKeys), cloudKeys...)
	retryKeys       = []string{"attempts", "on_status_codes", "initial_backoff_ms"}
	breakerKeys     = []string{"failure_threshold", "success_threshold", "max_half_threshold", "timeout"}
	concurrencyKeys = []string{"max_concurrency", "queue_size"}
)

// decodeConfig is phase 1: the strict decode into a Config preset with the
// static defaults, so a key left out keeps its default and a key written
// with a zero value (max_request_bytes: 0) is seen, and refused, as such.
func (d *decoder) decodeConfig(body ast.Node) *Config {
	cfg := &Config{
		Server: Server{
			Listen:          DefaultListen,
			MaxRequestBytes: DefaultMaxRequestBytes,
			RequestTimeout:  DefaultRequestTimeout,
			ShutdownTimeout: DefaultShutdownTimeout,
			BatchServer:     presetBatchServer,
			WebSocket:       WebSocket{MaxMessageBytes: DefaultWebSocketMessageBytes, IdleTimeout: DefaultWebSocketIdle},
		},
		Log: Log{Level: DefaultLogLevel, Format: DefaultLogFormat, AccessLog: true},
	}
	top := d.fields(body, "", "the config", topKeys...)
	delete(d.pos, "")

	srv := d.fields(top["server"], "server", "server", serverKeys...)
	d.setStr(srv, "server", "listen", &cfg.Server.Listen)
	d.setInt(srv, "server", "max_request_bytes", &cfg.Server.MaxRequestBytes)
	d.setDuration(srv, "server", "request_timeout", &cfg.Server.RequestTimeout)
	d.setDuration(srv, "server", "shutdown_timeout", &cfg.Server.ShutdownTimeout)
	d.setDuration(srv, "server", "drain_delay", &cfg.Server.DrainDelay)
	d.setDuration(srv, "server", "config_watch", &cfg.Server.ConfigWatch)
	d.setBool(srv, "server", "reduce_memory_usage", &cfg.Server.ReduceMemoryUsage)
	d.setStrList(srv, "server", "allowed_hosts", "host names", &cfg.Server.AllowedHosts)
	d.setStrList(srv, "server", "allowed_origins", "origins", &cfg.Server.AllowedOrigins)
	d.decodeBatchServer(srv, cfg)
	ws := d.fields(srv["websocket"], "server.websocket", "server.websocket", websocketKeys...)
	d.setInt(ws, "server.websocket", "max_message_bytes", &cfg.Server.WebSocket.MaxMessageBytes)
	d.setDuration(ws, "server.websocket", "idle_timeout", &cfg.Server.WebSocket.IdleTimeout)

	lg := d.fields(top["log"], "log", "log", logKeys...)
	d.setStr(lg, "log", "level", &cfg.Log.Level)
	d.setStr(lg, "log", "format", &cfg.Log.Format)
	d.setBool(lg, "log", "access_log", &cfg.Log.AccessLog)

	st := d.fields(top["strategy"], "strategy", "strategy", strategyKeys...)
	d.setStr(st, "strategy", "mode", &cfg.Strategy.Mode)
	if items, ok := d.list(st["conditions"], "strategy.conditions", "a list of conditions"); ok {
		cfg.Strategy.Conditions = make([]Condition, len(items))
		for i, it := range items {
			cfg.Strategy.Conditions[i] = d.decodeCondition(it, index("strategy.conditions", i))
		}
	}

	if items, ok := d.list(top["targets"], "targets", "a list of targets"); ok {
		cfg.Targets = make([]Target, len(items))
		for i, it := range items {
			cfg.Targets[i] = d.decodeTarget(it, index("targets", i))
		}
	}
	d.decodeAuth(top["auth"], cfg)
	d.decodeQuotas(top["quotas"], cfg)
	d.decodeAudit(top["audit"], cfg)
	d.decodeObservability(top, cfg)
	return cfg
}

func (d *decoder) decodeCondition(n ast.Node, path string) Condition {
	c := Condition{Line: d.pos[path].line}
	m := d.fields(n, path, "a condition", conditionKeys...)
	d.setStr(m, path, "key", &c.Key)
	d.setStr(m, path, "field", &c.Field)
	// value keeps the literal text of YAML numbers (1.0 stays "1.0") because
	// metadata numbers compare as written; YAML booleans become "true" or
	// "false" whatever their spelling (True, FALSE).
	if v := m["value"]; v != nil {
		p := join(path, "value")
		if r, _ := d.resolve(v, p); r != nil {
			if b, ok := r.(*ast.BoolNode); ok {
				if b.Value {
					c.Value = "true"
				} else {
					c.Value = "false"
				}
			} else if s, ok := d.str(v, p, "a string, number or boolean"); ok {
				c.Value = s
			}
		}
	}
	d.setStr(m, path, "target_key", &c.TargetKey)
	d.setStrList(m, path, "target_keys", "target names", &c.TargetKeys)
	// The Config outlives parsing (the gateway keeps it); share the strings
	// thousands of conditions repeat.
	c.Key, c.Field, c.TargetKey = d.intern(c.Key), d.intern(c.Field), d.intern(c.TargetKey)
	for i, k := range c.TargetKeys {
		c.TargetKeys[i] = d.intern(k)
	}
	return c
}

func (d *decoder) decodeTarget(n ast.Node, path string) Target {
	t := Target{
		Line:    d.pos[path].line,
		Timeout: DefaultTargetTimeout,
		Retry:   Retry{Attempts: DefaultRetryAttempts, InitialBackoffMs: DefaultInitialBackoffMs},
		CircuitBreaker: CircuitBreaker{
			FailureThreshold: DefaultFailureThreshold,
			SuccessThreshold: DefaultSuccessThreshold,
			MaxHalfThreshold: DefaultMaxHalfThreshold,
			Timeout:          DefaultBreakerTimeout,
		},
		Concurrency: Concurrency{MaxConcurrency: DefaultMaxConcurrency, QueueSize: DefaultQueueSize},
	}
	m := d.fields(n, path, "a target", targetKeysAll...)
	d.setStr(m, path, "virtual_key", &t.VirtualKey)
	d.setStr(m, path, "provider", &t.Provider)
	d.setStr(m, path, "base_url", &t.BaseURL)
	d.setStr(m, path, "api_key", &t.APIKey)
	d.setStr(m, path, "region", &t.Region)
	d.setStr(m, path, "aws_access_key_id", &t.AWSAccessKeyID)
	d.setStr(m, path, "aws_secret_access_key", &t.AWSSecretAccessKey)
	d.setStr(m, path, "aws_session_token", &t.AWSSessionToken)
	d.setStrList(m, path, "anthropic_betas", "beta flags", &t.AnthropicBetas)
	d.decodeCloud(m, path, &t.Cloud)
	d.setStrList(m, path, "models", "model ids or prefix* patterns", &t.Models)
	d.setStrMap(m, path, "model_map", &t.ModelMap)
	d.setDuration(m, path, "timeout", &t.Timeout)
	d.setStr(m, path, "residency", &t.Residency)

	rp := join(path, "retry")
	r := d.fields(m["retry"], rp, "retry", retryKeys...)
	d.setInt(r, rp, "attempts", &t.Retry.Attempts)
	d.setIntList(r, rp, "on_status_codes", &t.Retry.OnStatusCodes)
	d.setInt(r, rp, "initial_backoff_ms", &t.Retry.InitialBackoffMs)

	bp := join(path, "circuit_breaker")
	b := d.fields(m["circuit_breaker"], bp, "circuit_breaker", breakerKeys...)
	d.setInt(b, bp, "failure_threshold", &t.CircuitBreaker.FailureThreshold)
	d.setInt(b, bp, "success_threshold", &t.CircuitBreaker.SuccessThreshold)
	d.setInt(b, bp, "max_half_threshold", &t.CircuitBreaker.MaxHalfThreshold)
	d.setDuration(b, bp, "timeout", &t.CircuitBreaker.Timeout)

	cp := join(path, "concurrency")
	c := d.fields(m["concurrency"], cp, "concurrency", concurrencyKeys...)
	d.setInt(c, cp, "max_concurrency", &t.Concurrency.MaxConcurrency)
	d.setInt(c, cp, "queue_size", &t.Concurrency.QueueSize)
	d.decodeLimits(m["limits"], join(path, "limits"), &t.Limits)
	d.decodePrices(m["prices"], join(path, "prices"), &t.Prices)
	d.decodePrices(m["batch_prices"], join(path, "batch_prices"), &t.BatchPrices)
	return t
}

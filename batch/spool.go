package batch

import (
	"bufio"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
)

// spoolPrefix starts every spool file's name, followed by the process id
// of the gateway that wrote it.
const spoolPrefix = "switchyard-upload-"

// CleanSpools removes the spool files in dir ("" = the system's temporary
// directory) left by gateway processes that no longer run (killed
// outright in the middle of an upload), and returns how many. Another
// running gateway's spools are left alone.
func CleanSpools(dir string) int {
	if dir == "" {
		dir = os.TempDir()
	}
	names, _ := filepath.Glob(filepath.Join(dir, spoolPrefix+"*"))
	n := 0
	for _, name := range names {
		rest := strings.TrimPrefix(filepath.Base(name), spoolPrefix)
		i := strings.IndexByte(rest, '-')
		if i <= 0 {
			continue
		}
		pid, err := strconv.Atoi(rest[:i])
		if err != nil || pid <= 0 || pid == os.Getpid() || processAlive(pid) {
			continue
		}
		if os.Remove(name) == nil {
			n++
		}
	}
	return n
}

// Spooling: an upload is written to a temporary file while its lines are
// checked, so the gateway's memory stays small whatever the file's size,
// and nothing leaves for a target until every line has passed. All spool
// files together are held to server.max_spool_bytes.

// errSpoolFull is an upload that would take the spools past their bound.
var errSpoolFull = errors.New("the gateway's spool space for uploads is in use; retry shortly")

// spoolChunk is how much spool space an upload reserves at a time as its
// bytes arrive (a declared Content-Length reserves it all at once).
const spoolChunk = 1 << 20

// Spools counts the bytes every upload in flight holds on disk. Safe for
// concurrent use.
type Spools struct {
	used atomic.Int64
}

// Used returns the bytes reserved by uploads in flight.
func (s *Spools) Used() int64 { return s.used.Load() }

// reserve takes n more bytes within limit; false when they do not fit.
func (s *Spools) reserve(n, limit int64) bool {
	for {
		u := s.used.Load()
		if u+n > limit {
			return false
		}
		if s.used.CompareAndSwap(u, u+n) {
			return true
		}
	}
}

// spool is one upload's temporary file, written as its bytes arrive and
// read back (from its start) for each attempt. Not safe for concurrent use.
type spool struct {
	s     *Spools
	limit int64 // the spools' bound (server.max_spool_bytes)
	f     *os.File
	w     *bufio.Writer
	size  int64 // bytes written
	held  int64 // bytes reserved in s
}

// newSpool creates a spool file in dir ("" = the system's temporary
// directory), reserving want bytes at once (0: as they arrive).
func (s *Spools) newSpool(dir string, limit, want int64) (*spool, error) {
	if want > 0 && !s.reserve(want, limit) {
		return nil, errSpoolFull
	}
	f, err := os.CreateTemp(dir, spoolPrefix+strconv.Itoa(os.Getpid())+"-*")
	if err != nil {
		if want > 0 {
			s.used.Add(-want)
		}
		return nil, err
	}
	return &spool{s: s, limit: limit, f: f, w: bufio.NewWriterSize(f, 64<<10), held: want}, nil
}

// Write appends p, reserving spool space as needed.
func (sp *spool) Write(p []byte) (int, error) {
	if need := sp.size + int64(len(p)) - sp.held; need > 0 {
		more := max(need, spoolChunk)
		if !sp.s.reserve(more, sp.limit) {
			return 0, errSpoolFull
		}
		sp.held += more
	}
	n, err := sp.w.Write(p)
	sp.size += int64(n)
	return n, err
}

// finish flushes what was written; the file is then read with ReadAt or a
// SectionReader.
func (sp *spool) finish() error { return sp.w.Flush() }

// remove deletes the file and gives its space back. Safe to call twice.
func (sp *spool) remove() {
	if sp == nil || sp.f == nil {
		return
	}
	name := sp.f.Name()
	sp.f.Close()
	os.Remove(name)
	sp.f = nil
	sp.s.used.Add(-sp.held)
	sp.held = 0
}

package audit

import (
	"bufio"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
)

// Report is what Verify found in an unbroken set of files.
type Report struct {
	Files, Records, Checkpoints int
	// First and Last are the time fields of the first and last record.
	First, Last string
	// Unsigned is the number of lines after the last checkpoint: written
	// after it, or by a writer stopped before it signed them.
	Unsigned int
	// Partial is true when the last file ends in an incomplete line (the
	// writer was killed while writing it); it is not counted.
	Partial bool
}

// String renders the report as audit verify prints it.
func (r *Report) String() string {
	s := fmt.Sprintf("ok: %d file(s), %d lines (%d requests, %d checkpoints), %s to %s",
		r.Files, r.Records+r.Checkpoints, r.Records, r.Checkpoints, orDash(r.First), orDash(r.Last))
	if r.Unsigned > 0 {
		s += fmt.Sprintf("; the last %d line(s) come after the last checkpoint: unsigned", r.Unsigned)
	}
	if r.Partial {
		s += "; the last file ends in an incomplete line (the writer stopped while writing it), not counted"
	}
	return s
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// Break is the first line where a set of files stops being the chain the
// gateway wrote.
type Break struct {
	File   string
	Line   int
	Reason string
}

func (b *Break) Error() string { return fmt.Sprintf("%s:%d: %s", b.File, b.Line, b.Reason) }

// line is the part of an audit line Verify reads.
type line struct {
	Checkpoint *string `json:"checkpoint"`
	Seq        *uint64 `json:"seq"`
	Prev       *string `json:"prev"`
	Head       string  `json:"head"`
	Sig        string  `json:"sig"`
	Time       string  `json:"time"`
}

// Verify checks files, given in chain order (rotated files oldest first,
// then the current one), against pub: every line's prev, every
// checkpoint's signature, and that each file continues the one before it.
// The first line of the first file must start a chain. A *Break names the
// first line that does not fit; any other error is an I/O error.
func Verify(pub ed25519.PublicKey, files []string) (*Report, error) {
	v := &verifier{pub: pub, r: Report{Files: len(files)}, prev: genesis}
	r := &v.r
	for fi, name := range files {
		f, err := os.Open(name)
		if err != nil {
			return nil, err
		}
		br := bufio.NewReaderSize(f, 1<<20)
		n := 0
		for {
			b, err := br.ReadBytes('\n')
			if err != nil && err != io.EOF {
				f.Close()
				return nil, err
			}
			if len(b) == 0 {
				break
			}
			n++
			if b[len(b)-1] != '\n' {
				if fi == len(files)-1 {
					r.Partial = true
					break
				}
				f.Close()
				return nil, &Break{name, n, "incomplete last line, but a later file follows: the files are out of order or this one was cut"}
			}
			b = b[:len(b)-1]
			if brk := v.check(b, n == 1 && fi > 0, files, fi); brk != "" {
				f.Close()
				return nil, &Break{name, n, brk}
			}
		}
		f.Close() // an empty file (just rotated to) holds nothing to check
	}
	return r, nil
}

// verifier is the state of one Verify: the chain's head and last seq.
type verifier struct {
	pub  ed25519.PublicKey
	r    Report
	prev string
	seq  uint64
}

// check verifies one line against the chain so far and advances it; it
// returns why the line breaks the chain, or "".
func (v *verifier) check(b []byte, fileStart bool, files []string, fi int) string {
	r, prev, seq := &v.r, &v.prev, &v.seq
	var l line
	if err := json.Unmarshal(b, &l); err != nil || l.Seq == nil {
		return "not an audit line (edited, or not written by the gateway)"
	}
	at := *prev
	*prev = hex.EncodeToString(sum(b))
	if l.Checkpoint != nil {
		if l.Head != at {
			return "checkpoint head is not the SHA-256 of the line before it: that line was edited, or lines were deleted, inserted or reordered before this checkpoint"
		}
		if *l.Seq != *seq {
			return fmt.Sprintf("checkpoint seq %d, but the last line before it has seq %d", *l.Seq, *seq)
		}
		sig, err := base64.StdEncoding.DecodeString(l.Sig)
		if err != nil || !ed25519.Verify(v.pub, checkpointMessage(*l.Checkpoint, *l.Seq, l.Head), sig) {
			return "checkpoint signature does not verify with this public key: a wrong key, or the checkpoint was edited"
		}
		r.Checkpoints++
		r.Unsigned = 0
		return ""
	}
	if l.Prev == nil {
		return "not an audit line: no prev field"
	}
	if *l.Prev != at {
		switch {
		case at == genesis:
			return "this line continues a chain whose earlier lines are not given: pass the files before it too (a rotated set's first file may be missing)"
		case fileStart:
			return fmt.Sprintf("this file does not continue %s: a file of the set is missing, the files are out of order, or the last line of %s was edited", files[fi-1], files[fi-1])
		}
		return "prev is not the SHA-256 of the line before it: the line before was edited, or lines were deleted, inserted or reordered here"
	}
	if *l.Seq != *seq+1 && !(at == genesis && *seq == 0) {
		return fmt.Sprintf("seq %d follows seq %d", *l.Seq, *seq)
	}
	*seq = *l.Seq
	r.Records++
	r.Unsigned++
	if r.First == "" {
		r.First = l.Time
	}
	r.Last = l.Time
	return ""
}

func sum(b []byte) []byte {
	s := sha256.Sum256(b)
	return s[:]
}

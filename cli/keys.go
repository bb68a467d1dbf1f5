package cli

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"strconv"
)

// Stdin is where `keys hash` reads the key; tests replace it.
var Stdin io.Reader = os.Stdin

// keyBytes is the randomness of a key from `keys new` (docs/client-keys.md: at least 32).
const keyBytes = 32

// maxHashInput bounds what `keys hash` reads: a key is a header value.
const maxHashInput = 64 << 10

// keys implements `switchyard keys new [-name N]` and `switchyard keys hash`.
func keys(args []string, stdout, stderr io.Writer) int {
	const use = "usage: switchyard keys new [-name N] | switchyard keys hash < KEYFILE\n"
	if len(args) == 0 {
		fmt.Fprint(stderr, "switchyard keys: want a subcommand: new or hash\n"+use)
		return ExitUsage
	}
	if isHelp(args[0]) {
		fmt.Fprint(stdout, use)
		return ExitOK
	}
	switch args[0] {
	case "new":
		return keysNew(args[1:], stdout, stderr)
	case "hash":
		return keysHash(args[1:], stdout, stderr)
	}
	fmt.Fprintf(stderr, "switchyard keys: unknown subcommand %q; want new or hash\n", args[0])
	return ExitUsage
}

// keysNew prints a fresh key ("sy-" and 32 random bytes in unpadded
// base64url) on the first line, then the auth.keys entry holding its
// digest. The key is printed once and stored nowhere.
func keysNew(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("keys new", stderr)
	name := fs.String("name", "new-key", "the key's `name` in the config entry")
	if code := parseFlags(fs, args, stderr); code >= 0 {
		return code
	}
	if *name == "" {
		fmt.Fprintln(stderr, "keys new: -name is empty; want a label for logs and metrics")
		return ExitUsage
	}
	var b [keyBytes]byte
	if _, err := rand.Read(b[:]); err != nil {
		fmt.Fprintf(stderr, "keys new: no randomness: %v\n", err)
		return ExitFail
	}
	key := "sy-" + base64.RawURLEncoding.EncodeToString(b[:])
	sum := sha256.Sum256([]byte(key))
	fmt.Fprintf(stdout, "%s\n", key)
	fmt.Fprintf(stdout, "# The key above is shown once and stored nowhere: hand it to the client now.\n")
	fmt.Fprintf(stdout, "# Add this entry under auth.keys in the config, then reload (SIGHUP):\n")
	fmt.Fprintf(stdout, "- name: %s\n  sha256: %s\n", strconv.Quote(*name), hex.EncodeToString(sum[:]))
	return ExitOK
}

// keysHash prints the hex SHA-256 of the key read from standard input,
// without its trailing line ending (so `echo KEY | switchyard keys hash`
// hashes KEY).
func keysHash(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("keys hash", stderr)
	if code := parseFlags(fs, args, stderr); code >= 0 {
		return code
	}
	data, err := io.ReadAll(io.LimitReader(Stdin, maxHashInput+1))
	if err != nil {
		fmt.Fprintf(stderr, "keys hash: cannot read standard input: %v\n", err)
		return ExitFail
	}
	if len(data) > maxHashInput {
		fmt.Fprintf(stderr, "keys hash: standard input is over %d bytes; want one key\n", maxHashInput)
		return ExitFail
	}
	key := bytes.TrimRight(data, "\r\n")
	if len(key) == 0 {
		fmt.Fprintln(stderr, "keys hash: standard input is empty; want the key, e.g. echo \"$KEY\" | switchyard keys hash")
		return ExitFail
	}
	// A client's key is read with surrounding spaces and tabs trimmed, so
	// a digest of a key that has them could never match: refuse it.
	if len(bytes.Trim(key, " \t")) != len(key) {
		fmt.Fprintln(stderr, "keys hash: the key starts or ends with a space or tab; a presented key never does")
		return ExitFail
	}
	sum := sha256.Sum256(key)
	fmt.Fprintln(stdout, hex.EncodeToString(sum[:]))
	return ExitOK
}

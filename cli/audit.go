package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/switchyard/switchyard/audit"
)

// auditCmd implements `switchyard audit keygen` and
// `switchyard audit verify -pub KEY FILE...` (docs/residency.md).
func auditCmd(args []string, stdout, stderr io.Writer) int {
	const use = "usage: switchyard audit keygen | switchyard audit verify -pub KEY FILE...\n"
	if len(args) == 0 {
		fmt.Fprint(stderr, "switchyard audit: want a subcommand: keygen or verify\n"+use)
		return ExitUsage
	}
	if isHelp(args[0]) {
		fmt.Fprint(stdout, use)
		return ExitOK
	}
	switch args[0] {
	case "keygen":
		return auditKeygen(args[1:], stdout, stderr)
	case "verify":
		return auditVerify(args[1:], stdout, stderr)
	}
	fmt.Fprintf(stderr, "switchyard audit: unknown subcommand %q\n%s", args[0], use)
	return ExitUsage
}

// auditKeygen prints a fresh key pair as two shell assignments: the private
// key for audit.signing_key and the public key for audit verify -pub.
func auditKeygen(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("audit keygen", stderr)
	if code := parseFlags(fs, args, stderr); code >= 0 {
		return code
	}
	priv, pub, err := audit.GenerateKey()
	if err != nil {
		fmt.Fprintf(stderr, "audit keygen: %v\n", err)
		return ExitFail
	}
	fmt.Fprintf(stdout, "# The private key signs the audit log's checkpoints: keep it secret (audit.signing_key: ${AUDIT_SIGNING_KEY}).\n")
	fmt.Fprintf(stdout, "AUDIT_SIGNING_KEY=%s\n", priv)
	fmt.Fprintf(stdout, "# The public key is for auditors: switchyard audit verify -pub \"$AUDIT_PUBLIC_KEY\" FILE...\n")
	fmt.Fprintf(stdout, "AUDIT_PUBLIC_KEY=%s\n", pub)
	return ExitOK
}

// auditVerify checks audit log files given in chain order. -pub is the
// public key's text, or a file holding it (as written by keygen, with or
// without the AUDIT_PUBLIC_KEY= prefix).
func auditVerify(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("audit verify", stderr)
	pubArg := fs.String("pub", "", "the public `KEY` from switchyard audit keygen, or a file holding it (required)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return ExitOK
		}
		return ExitUsage
	}
	if *pubArg == "" || fs.NArg() == 0 {
		fmt.Fprint(stderr, "audit verify: want -pub KEY and at least one FILE (rotated files oldest first, the current file last)\n")
		return ExitUsage
	}
	text := *pubArg
	if b, err := os.ReadFile(text); err == nil {
		text = string(b)
	}
	text = strings.TrimPrefix(strings.TrimSpace(text), "AUDIT_PUBLIC_KEY=")
	pub, err := audit.ParsePublicKey(text)
	if err != nil {
		fmt.Fprintf(stderr, "audit verify: -pub: %v\n", err)
		return ExitUsage
	}
	r, err := audit.Verify(pub, fs.Args())
	var brk *audit.Break
	switch {
	case errors.As(err, &brk):
		fmt.Fprintf(stdout, "BROKEN: %v\n", brk)
		return ExitFail
	case err != nil:
		fmt.Fprintf(stdout, "audit verify: %v\n", err)
		return ExitFail
	}
	fmt.Fprintln(stdout, r.String())
	return ExitOK
}

// Package cli implements Switchyard's command line (docs/configuration.md, Command line): the
// subcommands serve, validate, explain, keys and version, their flags, and their
// exit codes.
//
// Main is the whole entry point; main.go only calls it. Serving is injected
// through the Serve variable so this package does not depend on the server.
//
// Output: a command's report (validate's problems, warnings and summary;
// explain's explanation; the version) goes to stdout. Usage errors, and the
// errors that stop explain from explaining, go to stderr.
package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
)

// Exit codes.
const (
	// ExitOK means success.
	ExitOK = 0
	// ExitFail means the command ran and failed: an invalid or unreadable
	// config, or warnings under validate -strict.
	ExitFail = 1
	// ExitUsage means the command line was wrong: an unknown subcommand, a
	// bad flag, a missing required flag.
	ExitUsage = 2
)

// Serve runs the gateway with the config file at cfgPath; listen, when not
// empty, overrides server.listen. It returns the process exit code.
//
// Serve is set by main before Main runs; when it is nil the serve command
// reports that serving is not built and exits 1. It is read once per Main
// call; set it before calling Main, not concurrently with it.
var Serve func(cfgPath, listen string) int

// EnvConfig is the environment variable naming the default config file.
const EnvConfig = "SWITCHYARD_CONFIG"

// DefaultConfigFile is the config file used when neither -config nor
// $SWITCHYARD_CONFIG names one.
const DefaultConfigFile = "config.yaml"

const usage = `Usage:
  switchyard [serve] [-config FILE] [-listen ADDR]   run the gateway (default)
  switchyard validate [-config FILE] [-strict]      check a config; exit 0 ok, 1 invalid, 2 usage
  switchyard explain  [-config FILE] -model M [-user U] [-stream] [-tools] [-key NAME]
                      [-metadata JSON] [-surface chat|completions|embeddings|images|responses|messages]
                                                    show how a request would be routed
  switchyard keys new [-name N]                     a fresh client key and its config entry
  switchyard keys hash                              hex SHA-256 of the key read from standard input
  switchyard audit keygen                           a fresh audit signing key pair
  switchyard audit verify -pub KEY FILE...          check audit log files: chain, checkpoints, continuity
  switchyard version                                print the version

-config defaults to $SWITCHYARD_CONFIG, then config.yaml.
`

// Main runs the command line args (without the program name) and returns
// the process exit code. It never calls os.Exit, so tests can call it with
// buffers for stdout and stderr.
func Main(args []string, stdout, stderr io.Writer) int {
	cmd, rest := "serve", args
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		cmd, rest = args[0], args[1:]
	}
	switch cmd {
	case "serve":
		if len(args) > 0 && isHelp(args[0]) {
			// "switchyard -h" asks for the whole usage, not serve's flags.
			fmt.Fprint(stdout, usage)
			return ExitOK
		}
		return serve(rest, stderr)
	case "validate":
		return validate(rest, stdout, stderr)
	case "explain":
		return explain(rest, stdout, stderr)
	case "version":
		return version(rest, stdout, stderr)
	case "keys":
		return keys(rest, stdout, stderr)
	case "audit":
		return auditCmd(rest, stdout, stderr)
	case "help":
		fmt.Fprint(stdout, usage)
		return ExitOK
	}
	fmt.Fprintf(stderr, "switchyard: unknown command %q\n\n%s", cmd, usage)
	return ExitUsage
}

func isHelp(arg string) bool {
	switch arg {
	case "-h", "-help", "--help":
		return true
	}
	return false
}

// newFlagSet returns a flag set for subcommand name that reports errors to
// stderr and does not exit.
func newFlagSet(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("switchyard "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return fs
}

// configFlag registers -config with its default: $SWITCHYARD_CONFIG, then
// config.yaml.
func configFlag(fs *flag.FlagSet) *string {
	def := os.Getenv(EnvConfig)
	if def == "" {
		def = DefaultConfigFile
	}
	return fs.String("config", def, "config `file` (default $"+EnvConfig+", then "+DefaultConfigFile+")")
}

// parseFlags parses args into fs and refuses positional arguments. It
// returns the exit code to stop with, or -1 to go on. -h prints the flags
// and exits 0.
func parseFlags(fs *flag.FlagSet, args []string, stderr io.Writer) int {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return ExitOK
		}
		// The flag package has already printed the error and the flags.
		return ExitUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "%s: unexpected argument %q\n", fs.Name(), fs.Arg(0))
		fs.Usage()
		return ExitUsage
	}
	return -1
}

// serve parses serve's flags and hands over to Serve.
func serve(args []string, stderr io.Writer) int {
	fs := newFlagSet("serve", stderr)
	cfgPath := configFlag(fs)
	listen := fs.String("listen", "", "listen `address`, overriding server.listen")
	if code := parseFlags(fs, args, stderr); code >= 0 {
		return code
	}
	run := Serve
	if run == nil {
		fmt.Fprintln(stderr, "serve: not built yet")
		return ExitFail
	}
	return run(*cfgPath, *listen)
}

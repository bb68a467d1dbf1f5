// Command switchyard is an OpenAI-compatible LLM gateway that routes each
// request only to the targets its matching rule names.
//
// The command line lives in package cli; this file only hands it the
// arguments and the standard streams.
package main

import (
	"os"

	"github.com/switchyard/switchyard/cli"
	"github.com/switchyard/switchyard/daemon"
)

func main() {
	cli.Serve = daemon.Run
	os.Exit(cli.Main(os.Args[1:], os.Stdout, os.Stderr))
}

//go:build pprof

// This file is compiled only with `go build -tags pprof`. It serves
// net/http/pprof on $SWITCHYARD_PPROF_LISTEN (e.g. 127.0.0.1:6060) so the
// benchmark (bench/cmd/benchrun, -profile-seconds) and developers can profile the
// gateway under real load. Release builds have no such listener.
package main

import (
	"net/http"
	_ "net/http/pprof"
	"os"
)

func init() {
	addr := os.Getenv("SWITCHYARD_PPROF_LISTEN")
	if addr == "" {
		return
	}
	go func() {
		if err := http.ListenAndServe(addr, nil); err != nil {
			os.Stderr.WriteString("switchyard: pprof listener: " + err.Error() + "\n")
		}
	}()
}

package cli

import (
	"fmt"
	"io"
	"runtime/debug"
)

// Version is the release version printed by `switchyard version`. Release
// builds set it with
//
//	go build -ldflags "-X github.com/switchyard/switchyard/cli.Version=v1.2.3" .
//
// When empty (the default), the main module version from the build info is
// used (set by `go install module@version`), else "dev".
var Version string

func version(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("version", stderr)
	if code := parseFlags(fs, args, stderr); code >= 0 {
		return code
	}
	info, ok := debug.ReadBuildInfo()
	fmt.Fprintf(stdout, "switchyard %s\n", versionString(Version, info, ok))
	return ExitOK
}

// versionString picks the version: the -X value, then a real module
// version from the build info, then "dev".
func versionString(set string, info *debug.BuildInfo, ok bool) string {
	if set != "" {
		return set
	}
	if ok && info != nil {
		if v := info.Main.Version; v != "" && v != "(devel)" {
			return v
		}
	}
	return "dev"
}

package cli

import "runtime/debug"

// CurrentVersion is the version `switchyard version` prints.
func CurrentVersion() string {
	info, ok := debug.ReadBuildInfo()
	return versionString(Version, info, ok)
}

//go:build unix

package batch

import (
	"errors"
	"syscall"
)

// processAlive reports whether process pid runs (or may: a process of
// another user answers EPERM).
func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

package daemon

import (
	"time"

	"github.com/rs/zerolog"

	"github.com/switchyard/switchyard/config"
	"github.com/switchyard/switchyard/hotpath"
)

// telemetry connects the daemon to metrics and the access log.
//
// Package telemetry is not in the tree yet: until it lands this bridge does
// nothing, so reload results and target lists are only logged.
type telemetry struct{}

func newTelemetry(*config.Config, zerolog.Logger) telemetry { return telemetry{} }

// attach sets the Gateway's Observer and Metrics hooks; call before serving.
func (telemetry) attach(*hotpath.Gateway) {}

// targets publishes the targets of st (after a swap).
func (telemetry) targets(*hotpath.State) {}

// reload records a reload result and the hash served afterwards.
func (telemetry) reload(result, hash string, now time.Time) {}

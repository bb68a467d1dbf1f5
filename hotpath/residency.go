package hotpath

import (
	"slices"

	"github.com/switchyard/switchyard/config"
	"github.com/switchyard/switchyard/telemetry"
	"github.com/switchyard/switchyard/upstream"
)

// fenceFor returns the residency guard of client key k (docs/residency.md, The
// guard in the walk): the targets of cfg whose label is one of k's. nil when k has
// no residency.
func fenceFor(cfg *config.Config, k *config.ClientKey) *upstream.Fence {
	if k.Residency == nil {
		return nil
	}
	allowed := make([]bool, len(cfg.Targets))
	for i := range cfg.Targets {
		allowed[i] = slices.Contains(k.Residency, cfg.Targets[i].Residency)
	}
	return upstream.NewFence(allowed)
}

// fenceOf returns the guard of the request's key (nil: none, or no key).
func (k *clientKey) fenceOf() *upstream.Fence {
	if k == nil {
		return nil
	}
	return k.fence
}

// reportFenced tells Gateway.Fenced that the guard stopped a walk, and
// notes the refused member as the walk's last step (for the audit log).
func (g *Gateway) reportFenced(k *clientKey, res *upstream.Result, tr *tracker) {
	if !res.Fenced || res.Target == nil {
		return
	}
	if tr != nil {
		tr.reached(res.Target)
		tr.steps = append(tr.steps, telemetry.Step{Target: res.Target, Class: res.Class, Refused: true})
	}
	if g.Fenced != nil {
		g.Fenced(keyName(k), res.Target.Name)
	}
}

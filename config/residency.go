package config

import (
	"fmt"
	"os"
	"strings"

	"github.com/switchyard/switchyard/router"
)

// Residency (docs/residency.md): targets carry a label, client
// keys list the labels their requests may reach, and a config in which some
// request of a key can reach a target without one of its labels is refused.

// maxLabel bounds a residency label, a value in every audit line.
const maxLabel = 64

// validLabel reports what is wrong with a residency label, or "".
func validLabel(l string) string {
	switch {
	case l == "":
		return "residency label is empty; want a label such as eu"
	case len(l) > maxLabel:
		return fmt.Sprintf("residency label is over %d bytes; want a short label such as eu", maxLabel)
	case strings.ContainsFunc(l, func(r rune) bool { return r <= ' ' || r == 0x7f }):
		return fmt.Sprintf("residency label %s has spaces or control characters; want a label such as eu", quoteShort(l))
	}
	return ""
}

// validateResidency checks the labels, then, when nothing else is wrong
// (the proof needs valid rules), runs the proof: each escape is a problem
// at the key's residency naming the rule, the target and a request.
func (d *decoder) validateResidency(cfg *Config) {
	for i := range cfg.Targets {
		p := join(index("targets", i), "residency")
		if d.has[p] || cfg.Targets[i].Residency != "" {
			if msg := validLabel(cfg.Targets[i].Residency); msg != "" {
				d.problemf(p, "%s", msg)
			}
		}
	}
	for i := range cfg.Auth.Keys {
		k := &cfg.Auth.Keys[i]
		p := join(index("auth.keys", i), "residency")
		if k.Residency != nil && len(k.Residency) == 0 && !d.decodeBad[p] {
			d.problemf(p, "residency is empty, so the key could reach no target; omit residency to allow any target, or list labels")
		}
		for j, l := range k.Residency {
			if msg := validLabel(l); msg != "" {
				d.problemf(index(p, j), "%s", msg)
			}
		}
	}
	if len(d.probs) > 0 || d.unproven {
		return
	}
	keys := cfg.KeySpecs()
	restricted := false
	for i := range keys {
		restricted = restricted || keys[i].Residency != nil
	}
	if !restricted {
		return
	}
	rules, targets := cfg.RouterSpecs()
	escapes, err := router.CheckResidency(rules, targets, keys)
	if err != nil {
		d.problemf("auth.keys", "%v", err)
		return
	}
	s, err := router.Compile(rules, targets, 0)
	if err != nil {
		d.problemf("auth.keys", "%v", err)
		return
	}
	for _, e := range escapes {
		d.problemf(join(index("auth.keys", e.Key), "residency"), "%s", e.Message(s, keys))
	}
}

// ResidencyWarnings returns the lint findings about residency (a `validate`
// warning, an error with -strict): a labelled target that can reach a
// provider's global pool, where the provider, not the label, decides the
// region. Col is left 0 for the caller to fill in.
func (c *Config) ResidencyWarnings() []Problem {
	var out []Problem
	for i := range c.Targets {
		t := &c.Targets[i]
		if t.Residency == "" {
			continue
		}
		var why string
		switch t.Provider {
		case ProviderBedrock:
			if m := globalBedrockModel(t); m != "" {
				why = "it can send Bedrock a model id beginning \"global.\" (" + m + "): a global cross-region inference profile, which may run the request in any commercial region; use a geographic profile (eu., us., ...) or a base model id, and list the models the target serves"
			}
		case ProviderGemini:
			why = "the Gemini API serves from Google's global pool and cannot be pinned to a region; use a vertex target with a regional location"
		case ProviderVertex:
			if t.Region == VertexGlobal {
				why = "its Vertex AI region is global: Google may serve the request from any region; use a regional location such as europe-west4"
			}
		case ProviderAzure:
			if t.AzureDeploymentType == AzureGlobal {
				why = "its azure_deployment_type is global: Azure may process the request in any region; use a datazone or standard deployment"
			}
		}
		if why == "" {
			continue
		}
		out = append(out, Problem{File: c.File, Line: t.Line, Path: index("targets", i),
			Message: fmt.Sprintf("target %q has residency %q but %s", t.VirtualKey, t.Residency, why)})
	}
	return out
}

// globalPrefix begins the ids of Bedrock's global inference profiles.
const globalPrefix = "global."

// globalBedrockModel describes how a bedrock target can send a model id
// beginning "global.": a model_map value, or a model its models list
// admits and model_map does not replace; "" when it cannot.
func globalBedrockModel(t *Target) string {
	for from, to := range t.ModelMap {
		if strings.HasPrefix(to, globalPrefix) {
			return fmt.Sprintf("model %q (model_map[%q])", to, from)
		}
	}
	if t.Models == nil {
		return "no models list: any id a client names"
	}
	for _, m := range t.Models {
		if p, ok := strings.CutSuffix(m, "*"); ok {
			if strings.HasPrefix(p, globalPrefix) || strings.HasPrefix(globalPrefix, p) {
				return fmt.Sprintf("models entry %q", m)
			}
		} else if strings.HasPrefix(m, globalPrefix) {
			if _, mapped := t.ModelMap[m]; !mapped {
				return fmt.Sprintf("model %q", m)
			}
		}
	}
	return ""
}

// LoadUnproven is Load without the residency proof, for explain: it shows
// where a refused config's witness request goes. Never serve its result.
func LoadUnproven(path string) (*Config, error) {
	data, err := ReadFile(path)
	if err != nil {
		return nil, err
	}
	return parseOpt(path, data, os.LookupEnv, true)
}

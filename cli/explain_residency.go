package cli

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/switchyard/switchyard/router"
)

// explainResidency reports the residency check for key k's request
// (docs/residency.md): each candidate's label against the key's, and what
// the load-time proof found the key can reach. Nothing for a key without
// residency.
func explainResidency(x *report, snap *router.Snapshot, k *router.KeySpec, chain []int, members []ChainMember) {
	if k == nil || k.Residency == nil {
		return
	}
	for i, t := range chain {
		if !members[i].Candidate {
			continue
		}
		ts := snap.Target(t)
		verdict := "allowed"
		if !slices.Contains(k.Residency, ts.Residency) {
			verdict = "OUTSIDE the key's labels: the walk refuses it (500 internal_error)"
		}
		x.printf("residency: member %s has %s: %s", ts.Name, labelOf(ts.Residency), verdict)
	}
	reach := snap.Reachable(k)
	byTarget := map[int][]string{}
	var order []int
	for _, r := range reach {
		if _, ok := byTarget[r.Target]; !ok {
			order = append(order, r.Target)
		}
		via := "fallback"
		if r.Rule >= 0 {
			via = "strategy.conditions[" + strconv.Itoa(r.Rule) + "]"
		}
		byTarget[r.Target] = append(byTarget[r.Target], via)
	}
	slices.Sort(order)
	proof := &ResidencyProof{Labels: k.Residency, Reachable: []Reach{}}
	var parts []string
	for _, t := range order {
		ts := snap.Target(t)
		r := Reach{Target: ts.Name, Residency: ts.Residency, Via: byTarget[t], Outside: !slices.Contains(k.Residency, ts.Residency)}
		proof.Reachable = append(proof.Reachable, r)
		p := fmt.Sprintf("%s (%s, via %s)", ts.Name, labelOf(ts.Residency), strings.Join(r.Via, ", "))
		if r.Outside {
			p += " OUTSIDE"
		}
		parts = append(parts, p)
	}
	if len(parts) == 0 {
		parts = []string{"none"}
	}
	proof.OK = !slices.ContainsFunc(proof.Reachable, func(r Reach) bool { return r.Outside })
	x.e.Residency = proof
	x.printf("residency proof: key %s may reach %s; its requests can reach %s", k.Name, quoteLabels(k.Residency), strings.Join(parts, "; "))
	if proof.OK {
		x.printf("residency proof: ok, every target this key can reach carries one of its labels")
	} else {
		x.printf("residency proof: FAILS, this config is refused (switchyard validate names a request for each target outside)")
	}
}

func labelOf(l string) string {
	if l == "" {
		return "no residency label"
	}
	return "residency " + l
}

func quoteLabels(ls []string) string { return "[" + strings.Join(ls, ", ") + "]" }

package cli

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/switchyard/switchyard/router"
)

// explainResidency prints the residency check for key k's request
// (docs/residency.md): each candidate's label against the key's, and what
// the load-time proof found the key can reach. Nothing for a key without
// residency.
func explainResidency(w io.Writer, snap *router.Snapshot, k *router.KeySpec, chain []int, model []byte, surface router.Surface) {
	if k == nil || k.Residency == nil {
		return
	}
	for _, t := range chain {
		if !snap.ServesModel(t, model) || !snap.ServesSurface(t, surface) {
			continue
		}
		ts := snap.Target(t)
		verdict := "allowed"
		if !slices.Contains(k.Residency, ts.Residency) {
			verdict = "OUTSIDE the key's labels: the walk refuses it (500 internal_error)"
		}
		fmt.Fprintf(w, "residency: member %s has %s: %s\n", ts.Name, labelOf(ts.Residency), verdict)
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
	var parts []string
	escapes := 0
	for _, t := range order {
		ts := snap.Target(t)
		p := fmt.Sprintf("%s (%s, via %s)", ts.Name, labelOf(ts.Residency), strings.Join(byTarget[t], ", "))
		if !slices.Contains(k.Residency, ts.Residency) {
			p += " OUTSIDE"
			escapes++
		}
		parts = append(parts, p)
	}
	if len(parts) == 0 {
		parts = []string{"none"}
	}
	fmt.Fprintf(w, "residency proof: key %s may reach %s; its requests can reach %s\n", k.Name, quoteLabels(k.Residency), strings.Join(parts, "; "))
	if escapes == 0 {
		fmt.Fprintln(w, "residency proof: ok, every target this key can reach carries one of its labels")
	} else {
		fmt.Fprintln(w, "residency proof: FAILS, this config is refused (switchyard validate names a request for each target outside)")
	}
}

func labelOf(l string) string {
	if l == "" {
		return "no residency label"
	}
	return "residency " + l
}

func quoteLabels(ls []string) string { return "[" + strings.Join(ls, ", ") + "]" }

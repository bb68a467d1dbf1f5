package quota

import (
	"sort"
	"strings"

	"github.com/switchyard/switchyard/config"
)

// priceTable is one target's prices: exact ids, then prefix* patterns,
// longest prefix first.
type priceTable struct {
	exact    map[string]Price
	prefixes []prefixPrice
}

type prefixPrice struct {
	prefix string
	price  Price
}

func newPriceTable(prices map[string]config.Price) *priceTable {
	t := &priceTable{exact: map[string]Price{}}
	for m, p := range prices {
		// USD per 1M tokens is micro-USD per token.
		pp := priceOf(p)
		if strings.HasSuffix(m, "*") {
			t.prefixes = append(t.prefixes, prefixPrice{strings.TrimSuffix(m, "*"), pp})
		} else {
			t.exact[m] = pp
		}
	}
	sort.Slice(t.prefixes, func(i, j int) bool { return len(t.prefixes[i].prefix) > len(t.prefixes[j].prefix) })
	return t
}

// lookup returns the price of model (the id the client asked for).
// Allocation-free.
func (t *priceTable) lookup(model []byte) (Price, bool) {
	if p, ok := t.exact[string(model)]; ok {
		return p, true
	}
	for _, e := range t.prefixes {
		if len(model) >= len(e.prefix) && string(model[:len(e.prefix)]) == e.prefix {
			return e.price, true
		}
	}
	return Price{}, false
}

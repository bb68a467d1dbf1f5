package admin

import "github.com/switchyard/switchyard/quota"

// planQuotas reads the console's quota state from the configuration's
// compiled quota plan (package quota): each limit's size and the room left
// now, in this replica's view. Spend limits are in USD.
type planQuotas struct{ p *quota.Plan }

func (q planQuotas) use(name string, target bool) *QuotaUse {
	r, ok := q.p.RoomOf(name, target)
	if !ok {
		return nil
	}
	u := &QuotaUse{Limits: []QuotaLimit{}}
	for k := range quota.NumKinds {
		if r.Limit[k] <= 0 {
			continue
		}
		limit, left := float64(r.Limit[k]), float64(r.Left[k])
		if !r.Known {
			left = limit // no request counted yet
		}
		if k.Spend() {
			limit, left = limit/quota.MicroUSD, left/quota.MicroUSD
		}
		u.Limits = append(u.Limits, QuotaLimit{Name: k.String(), Limit: limit, Used: max(limit-left, 0), Remaining: max(left, 0)})
	}
	return u
}

// KeyQuota implements Quotas.
func (q planQuotas) KeyQuota(key string) *QuotaUse { return q.use(key, false) }

// TargetQuota implements Quotas.
func (q planQuotas) TargetQuota(target string) *QuotaUse { return q.use(target, true) }

// Spend implements Quotas: the key's spend in the current UTC day and
// month, known only for a key with both spend budgets (the plan counts
// spend for its budgets).
func (q planQuotas) Spend(key string) (day, month float64, ok bool) {
	r, found := q.p.RoomOf(key, false)
	if !found || r.Limit[quota.SpendPerDay] <= 0 || r.Limit[quota.SpendPerMonth] <= 0 {
		return 0, 0, false
	}
	if !r.Known {
		return 0, 0, true
	}
	day = float64(r.Limit[quota.SpendPerDay]-r.Left[quota.SpendPerDay]) / quota.MicroUSD
	month = float64(r.Limit[quota.SpendPerMonth]-r.Left[quota.SpendPerMonth]) / quota.MicroUSD
	return max(day, 0), max(month, 0), true
}

package admin

import (
	"sync"
	"time"
)

// MaxReloads is how many reloads History keeps.
const MaxReloads = 20

// Reload is one configuration load or reload as the console shows it.
type Reload struct {
	Time time.Time `json:"time"`
	// Result is "start", "success", "unchanged" or "failure".
	Result string `json:"result"`
	// Hash is the hex SHA-256 of the configuration served afterwards.
	Hash string `json:"hash"`
	// Trigger is what asked for it: "SIGHUP", "config_watch", "" (a
	// direct call) or "start".
	Trigger string `json:"trigger,omitempty"`
	// Problems are a failure's messages (config problems as validate
	// prints them; they never quote a credential).
	Problems []string `json:"problems,omitempty"`
}

// History is the last MaxReloads reloads, newest last, and when the
// configuration served was loaded. Safe for concurrent use.
type History struct {
	mu       sync.Mutex
	list     []Reload
	loadedAt time.Time
}

// Add records r.
func (h *History) Add(r Reload) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if r.Result == "start" || r.Result == "success" {
		h.loadedAt = r.Time
	}
	h.list = append(h.list, r)
	if n := len(h.list); n > MaxReloads {
		h.list = append(h.list[:0:0], h.list[n-MaxReloads:]...)
	}
}

// Snapshot returns a copy of the reloads, newest first, and the time the
// configuration served was loaded.
func (h *History) Snapshot() ([]Reload, time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]Reload, len(h.list))
	for i, r := range h.list {
		out[len(h.list)-1-i] = r
	}
	return out, h.loadedAt
}

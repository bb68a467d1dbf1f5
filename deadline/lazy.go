// Package deadline arms connection deadlines only when they change enough
// to matter.
//
// A keep-alive connection gets fresh deadlines for every request: fasthttp
// arms the server's idle, read and write timeouts (three per request) and
// the upstream call its write and read deadlines (two more). Each is a
// runtime timer moved in its heap, ~0.2 µs, a tenth of a small request's
// whole cost in the gateway, and dearer with several Ps sharing timers. A
// request usually asks for almost the deadline the one before it left
// armed (now + the same timeout, a few microseconds later), so a deadline
// that is later than the armed one by at most 1/64 of the time left until
// it is not armed: the earlier one stays and fires at most 1.6% early. An
// earlier deadline, a zero one (none) or a later one beyond that margin is
// always armed.
package deadline

import "time"

// Lazy is what is armed on one direction (read or write) of one
// connection. Its zero value means nothing is armed. Not safe for
// concurrent use: a connection's deadlines are set by the goroutine that
// owns it at the time.
type Lazy struct {
	// at is the armed deadline; zero: none.
	at time.Time
	// mono is at on the Mono clock.
	mono int64
}

// Skip reports whether t can be left unarmed: the armed deadline comes
// first, by at most 1/64 of the time left until t.
func (l *Lazy) Skip(t time.Time) bool {
	if t.IsZero() || l.at.IsZero() {
		return false
	}
	return l.skipAt(t, Mono())
}

// skipAt is Skip with now read from the Mono clock by the caller.
func (l *Lazy) skipAt(t time.Time, now int64) bool {
	if t.IsZero() || l.at.IsZero() {
		return false
	}
	late := t.Sub(l.at) // how much later t is than the armed deadline
	if late < 0 {
		return false
	}
	lead := time.Duration(l.mono - now) // left until the armed one fires
	return lead > 0 && late <= lead/63  // not 63*late: a far deadline would overflow
}

// Armed records that t is now armed.
func (l *Lazy) Armed(t time.Time) {
	l.at = t
	if !t.IsZero() {
		l.mono = onMono(t)
	}
}

// The process's start on both clocks: a time.Time made by time.Now (and
// Add) carries a monotonic reading, so its distance from timeRef, and so
// its place on the Mono clock, takes a subtraction and no clock read.
var (
	timeRef = time.Now()
	monoRef = Mono()
)

// onMono returns t on the Mono clock.
func onMono(t time.Time) int64 { return monoRef + int64(t.Sub(timeRef)) }

// Forget records that what is armed is unknown (an arm failed): the next
// deadline is armed whatever it is.
func (l *Lazy) Forget() { l.at = time.Time{} }

// Set arms t through arm (a connection's own setter) unless Skip allows
// leaving it, and records what is armed.
func (l *Lazy) Set(t time.Time, arm func(time.Time) error) error {
	if l.Skip(t) {
		return nil
	}
	return l.arm(t, arm)
}

// SetAt is Set for a caller that has just read the Mono clock (now): a
// request that sets several deadlines reads it once. A now older than the
// present by microseconds only matters for a deadline microseconds away.
func (l *Lazy) SetAt(t time.Time, now int64, arm func(time.Time) error) error {
	if l.skipAt(t, now) {
		return nil
	}
	return l.arm(t, arm)
}

func (l *Lazy) arm(t time.Time, arm func(time.Time) error) error {
	if err := arm(t); err != nil {
		l.Forget()
		return err
	}
	l.Armed(t)
	return nil
}

package router

// STUB: the router helper replaces this file with the compiled implementation.
// The exported signatures below are the contract other packages build against.

// Snapshot is an immutable compiled routing table. Safe for concurrent use;
// lookups take no lock and allocate nothing.
type Snapshot struct {
	targets []TargetSpec
	rules   []RuleSpec
	models  []ModelInfo
}

// Compile builds a Snapshot. targets must be non-empty; chains must index
// into targets. created is the Unix time reported in /v1/models.
func Compile(rules []RuleSpec, targets []TargetSpec, created int64) (*Snapshot, error) {
	panic("BUG: router.Compile not implemented")
}

// Match returns the index of the first rule (in declared order) that matches
// r and its chain, or rule -1 and the fallback chain [0] when none matches.
// The returned chain is owned by the Snapshot and must not be modified.
func (s *Snapshot) Match(r *Request) (rule int, chain []int) { panic("BUG") }

// ServesModel reports whether target t's models list admits model.
func (s *Snapshot) ServesModel(t int, model []byte) bool { panic("BUG") }

// ServesSurface reports whether target t's provider serves surface x.
func (s *Snapshot) ServesSurface(t int, x Surface) bool { panic("BUG") }

// Models returns the /v1/models list (SPEC §5), computed once at Compile.
func (s *Snapshot) Models() []ModelInfo { return s.models }

// Created returns the created timestamp passed to Compile.
func (s *Snapshot) Created() int64 { panic("BUG") }

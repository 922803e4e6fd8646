package runtime

import "context"

// WithoutDeadlines turns guest deadlines off, for benchmarks that measure
// what they cost.
func WithoutDeadlines(o *EngineOptions) { o.noDeadlines = true }

// Detached reports whether calls of f's current module run without
// wazero's goroutine per call.
func Detached(f *Filter) bool { return f.cur.Load().m.detached }

// Instantiate makes one more instance of f's current module, from its
// snapshot or by running the guest's start-up, and closes it; benchmarks
// compare the two.
func Instantiate(f *Filter, fromSnapshot bool) error {
	g := f.cur.Load()
	snap := g.snap
	if !fromSnapshot {
		snap = nil
	}
	inst, _, err := g.instantiate(context.Background(), snap, false)
	if err != nil {
		return err
	}
	inst.close()
	return nil
}

// WithoutBare makes instances from a snapshot instantiate with their data
// segments.
func WithoutBare(o *EngineOptions) { o.noBare = true }

// WithoutImage makes instances copy the snapshot's memory instead of
// mapping it.
func WithoutImage(o *EngineOptions) { o.noImage = true }

// FromBare reports whether instances of f's current module are made from
// the snapshot without the module's data segments.
func FromBare(f *Filter) bool { return f.cur.Load().m.bare != nil }

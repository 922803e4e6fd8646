package runtime

// WithoutDeadlines turns guest deadlines off, for benchmarks that measure
// what they cost.
func WithoutDeadlines(o *EngineOptions) { o.noDeadlines = true }

// Detached reports whether calls of f's current module run without
// wazero's goroutine per call.
func Detached(f *Filter) bool { return f.cur.Load().m.detached }

package runtime

// WithoutDeadlines turns guest deadlines off, for benchmarks that measure
// what they cost.
func WithoutDeadlines(o *EngineOptions) { o.noDeadlines = true }

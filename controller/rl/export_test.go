package rl

// GradStorage exposes p's gradient storage (nil once released) to the
// external tests.
func GradStorage(p *Params) []float64 { return p.grads }

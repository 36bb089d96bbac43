// Package progress is how a long evaluation run reports its progress to
// whoever drives it: the run starts a named bar of a total and sets it as
// it goes; the CLI draws it (cmd/aware), a test counts it, nil ignores it.
package progress

// Bar starts a bar called label of total steps and returns how to set it
// and how to end it.
type Bar func(label string, total int) (set func(done int), end func())

// Start is b(label, total), or no-ops when b is nil.
func (b Bar) Start(label string, total int) (set func(done int), end func()) {
	if b == nil {
		return func(int) {}, func() {}
	}
	return b(label, total)
}

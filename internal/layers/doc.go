// Package layers states the module's architecture as data: each package
// belongs to a room (by the longest path prefix that names one), and a
// room's packages may import only the rooms it lists, and, for the rooms
// that must stay portable, only the outside modules it lists. Its test
// checks every package's imports (`go list -deps -json ./...`) against the
// rules, so that an upward arrow fails CI. docs/architecture.md draws the
// rooms and says why each arrow is allowed.
package layers

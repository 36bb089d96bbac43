// Package pool checks a generated application pool against the
// simulator: Feasible says whether some allocation within the action
// bounds meets an application's SLO at a load, in the simulator's
// stationary model. The pool's simulator form (load shapes, SimApps) is
// generator's.
package pool

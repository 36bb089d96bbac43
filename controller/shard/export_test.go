package shard

import "context"

// Acquire, Renew, Release and Collect run one step of Start's loop, for
// tests that drive the clock.
func (m *Membership) Acquire(ctx context.Context) error { return m.acquire(ctx) }
func (m *Membership) Renew(ctx context.Context) error   { return m.renew(ctx) }
func (m *Membership) Release()                          { m.release() }
func (m *Membership) Collect(ctx context.Context)       { m.collect(ctx) }

package trajectory

// ForcedRounds is how many forced delivery rounds (Flush, reads, Close)
// the flusher has run.
func (s *InfluxStore) ForcedRounds() int64 { return s.forced.Load() }

// QueuedFlushes is how many Flush calls wait in the flusher's queue.
func (s *InfluxStore) QueuedFlushes() int { return len(s.reqs) }

package agent

import (
	"errors"
	"fmt"
	"math/rand/v2"
)

// Replay is a fixed-capacity ring buffer of transitions stored in contiguous
// row-major slices. Storage grows by appending up to the capacity (so a large
// capacity costs nothing until used); once full, the oldest transition is
// overwritten.
type Replay struct {
	capacity, stateDim, actionDim int
	next                          int // index of the next write once full
	states, actions, nexts        []float64
	rewards, dones                []float64
	tasks                         []int
}

// NewReplay returns an empty buffer for capacity transitions.
func NewReplay(capacity, stateDim, actionDim int) (*Replay, error) {
	if capacity <= 0 || stateDim <= 0 || actionDim <= 0 {
		return nil, fmt.Errorf("agent: NewReplay: capacity %d, state dim %d and action dim %d must be positive", capacity, stateDim, actionDim)
	}
	return &Replay{capacity: capacity, stateDim: stateDim, actionDim: actionDim}, nil
}

// Len returns the number of stored transitions.
func (r *Replay) Len() int { return len(r.rewards) }

// Cap returns the capacity.
func (r *Replay) Cap() int { return r.capacity }

// StateDim returns the state width.
func (r *Replay) StateDim() int { return r.stateDim }

// ActionDim returns the action width.
func (r *Replay) ActionDim() int { return r.actionDim }

// Add stores a copy of t, overwriting the oldest transition when full. It
// panics when a vector has the wrong width.
func (r *Replay) Add(t Transition) {
	if len(t.State) != r.stateDim || len(t.Next) != r.stateDim || len(t.Action) != r.actionDim {
		panic(fmt.Sprintf("agent: Replay.Add: state %d, next %d, action %d values, want %d, %d, %d",
			len(t.State), len(t.Next), len(t.Action), r.stateDim, r.stateDim, r.actionDim))
	}
	done := 0.0
	if t.Done {
		done = 1
	}
	if len(r.rewards) < r.capacity {
		if len(r.rewards) == cap(r.rewards) {
			r.reserve(min(max(2*len(r.rewards), 64), r.capacity))
		}
		r.states = append(r.states, t.State...)
		r.actions = append(r.actions, t.Action...)
		r.nexts = append(r.nexts, t.Next...)
		r.rewards = append(r.rewards, t.Reward)
		r.dones = append(r.dones, done)
		r.tasks = append(r.tasks, t.Task)
		return
	}
	i := r.next
	copy(r.states[i*r.stateDim:(i+1)*r.stateDim], t.State)
	copy(r.nexts[i*r.stateDim:(i+1)*r.stateDim], t.Next)
	copy(r.actions[i*r.actionDim:(i+1)*r.actionDim], t.Action)
	r.rewards[i], r.dones[i], r.tasks[i] = t.Reward, done, t.Task
	r.next = (i + 1) % r.capacity
}

// Batch is a minibatch in row-major slices: States and Next are
// Size×StateDim, Actions Size×ActionDim, Rewards and Done (1 or 0) Size;
// Tasks holds each transition's Task.
type Batch struct {
	States, Actions, Next, Rewards, Done []float64
	Tasks                                []int
}

// NewBatch allocates a minibatch of size transitions.
func NewBatch(size, stateDim, actionDim int) *Batch {
	return &Batch{
		States:  make([]float64, size*stateDim),
		Actions: make([]float64, size*actionDim),
		Next:    make([]float64, size*stateDim),
		Rewards: make([]float64, size),
		Done:    make([]float64, size),
		Tasks:   make([]int, size),
	}
}

// Size returns the number of transitions the batch holds.
func (b *Batch) Size() int { return len(b.Rewards) }

// ErrEmpty is returned by Sample on an empty buffer.
var ErrEmpty = errors.New("agent: replay buffer is empty")

// Sample fills dst with dst.Size() transitions drawn uniformly with
// replacement using rnd. It does not allocate.
func (r *Replay) Sample(dst *Batch, rnd *rand.Rand) error {
	n := r.Len()
	if n == 0 {
		return ErrEmpty
	}
	size, sd, ad := dst.Size(), r.stateDim, r.actionDim
	if len(dst.States) != size*sd || len(dst.Next) != size*sd || len(dst.Actions) != size*ad || len(dst.Done) != size || len(dst.Tasks) != size {
		return fmt.Errorf("agent: Replay.Sample: batch slices do not match size %d, state dim %d, action dim %d", size, sd, ad)
	}
	for k := range size {
		i := rnd.IntN(n)
		copy(dst.States[k*sd:(k+1)*sd], r.states[i*sd:(i+1)*sd])
		copy(dst.Next[k*sd:(k+1)*sd], r.nexts[i*sd:(i+1)*sd])
		copy(dst.Actions[k*ad:(k+1)*ad], r.actions[i*ad:(i+1)*ad])
		dst.Rewards[k], dst.Done[k], dst.Tasks[k] = r.rewards[i], r.dones[i], r.tasks[i]
	}
	return nil
}

// reserve grows the storage to hold n transitions exactly: a buffer grows
// by doubling up to its capacity and never past it (append's growth would
// leave a full buffer of the agent runner's 1024 transitions a quarter
// larger than it needs, for each of a thousand agents).
func (r *Replay) reserve(n int) {
	grow := func(s []float64, w int) []float64 { return append(make([]float64, 0, n*w), s...) }
	r.states, r.nexts = grow(r.states, r.stateDim), grow(r.nexts, r.stateDim)
	r.actions = grow(r.actions, r.actionDim)
	r.rewards, r.dones = grow(r.rewards, 1), grow(r.dones, 1)
	r.tasks = append(make([]int, 0, n), r.tasks...)
}

package agent

import "fmt"

// Embeddings is an agent's side of joint training with the meta learner,
// for agents whose states end with a workload embedding: each task's latest
// embedding, the current task, and the gradient of the last update's loss
// with respect to the current task's embedding. DDPG and PPO embed one.
// The zero value (no embedding) does nothing.
type Embeddings struct {
	dim    int
	byTask map[int][]float64
	task   int
	grad   []float64
	valid  bool
}

// NewEmbeddings returns the state for embeddings of dim values (0: none).
func NewEmbeddings(dim int) Embeddings {
	return Embeddings{dim: dim, grad: make([]float64, dim)}
}

// Set records task's embedding (copied) and makes task the current one.
func (e *Embeddings) Set(task int, v []float64) error {
	if len(v) != e.dim || e.dim == 0 {
		return fmt.Errorf("%d values for an embedding of %d (WithEmbedding)", len(v), e.dim)
	}
	if e.byTask == nil {
		e.byTask = map[int][]float64{}
	}
	e.byTask[task] = append(e.byTask[task][:0], v...)
	e.task = task
	return nil
}

// Refresh writes into the last dim values of each row of rows (width
// stride) the latest embedding of the row's task (tasks[k] for row k),
// where one is known: an embedding describes the application, not the
// moment, so every transition trains with its task's newest one.
func (e *Embeddings) Refresh(rows []float64, stride int, tasks []int) {
	if e.dim == 0 || len(e.byTask) == 0 {
		return
	}
	for k, task := range tasks {
		if v, ok := e.byTask[task]; ok {
			copy(rows[k*stride+stride-e.dim:k*stride+stride], v)
		}
	}
}

// StartUpdate clears the gradient before an update accumulates it.
func (e *Embeddings) StartUpdate() { clear(e.grad) }

// Accumulate adds to the gradient the embedding entries of the rows of g
// (width stride; the embedding ends at column end) whose task (tasks[k]) is
// the current one: other tasks' rows carry other embeddings.
func (e *Embeddings) Accumulate(g []float64, stride, end int, tasks []int) {
	for k, task := range tasks {
		if task != e.task {
			continue
		}
		for j, v := range g[k*stride+end-e.dim : k*stride+end] {
			e.grad[j] += v
		}
	}
}

// FinishUpdate marks the gradient as the last update's.
func (e *Embeddings) FinishUpdate() { e.valid = e.dim > 0 }

// Grad is the last update's gradient with respect to the current task's
// embedding, nil without an embedding or before the first update; shared:
// copy it to keep it.
func (e *Embeddings) Grad() []float64 {
	if !e.valid {
		return nil
	}
	return e.grad
}

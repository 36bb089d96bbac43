package agent

// Transition is one step of experience. Actions are normalised to [-1, 1]^ActionDim.
type Transition struct {
	State, Action []float64
	Reward        float64
	Next          []float64
	// Done marks the end of an episode: Next is not bootstrapped from.
	Done bool
	// Task identifies the application the transition comes from when one
	// agent learns several (EmbeddingLearner); 0 otherwise.
	Task int
}

// Stats reports an agent's training progress after an Update.
type Stats struct {
	// Updated is false when Update found too little experience and did nothing.
	Updated bool
	// Updates counts the training updates made so far, Steps the transitions
	// observed so far.
	Updates, Steps int
	// ActorLoss and CriticLoss are the last update's losses; MeanQ is the mean
	// critic value of the minibatch; Entropy is the policy entropy where the
	// algorithm defines one (0 otherwise).
	ActorLoss, CriticLoss, Entropy, MeanQ float64
	// ActorGradNorm and CriticGradNorm are the gradient norms before clipping.
	ActorGradNorm, CriticGradNorm float64
	// Epsilon is the current exploration scale where the algorithm has one.
	Epsilon float64
}

// Agent is a reinforcement-learning agent. Implementations are not safe for
// concurrent use.
type Agent interface {
	// Act writes the action for state into dst (len ActionDim) and returns it.
	Act(dst, state []float64, explore bool) []float64
	// Observe records one transition.
	Observe(t Transition)
	// Update runs one training update if enough experience is stored.
	Update() (Stats, error)
	// Save writes the agent's learnt state to path atomically.
	Save(path string) error
	// Load restores state written by Save of an agent with the same shape.
	Load(path string) error
}

// Releaser is an Agent that can drop what its updates and actions keep
// between them (its networks' gradients and batch buffers, its optimisers'
// float64 moments), for a process that hosts many agents and trains or
// acts with few at a time (controller/agents); the next Update or Act
// borrows them again from the process's scratch pools (controller/rl).
type Releaser interface {
	Agent
	Release()
}

// Policy is what acting needs of an agent.
type Policy interface {
	// Act writes the action for state into dst (len ActionDim) and returns it.
	Act(dst, state []float64, explore bool) []float64
}

// Freezer is an Agent that can hand over its policy alone, sharing its
// acting networks, for a process that hosts many agents of which most only
// act (controller/agents: an agent in SERVING). The policy acts as the
// agent does; the agent itself must not be used afterwards, and what it
// held for training (critics, target networks, optimiser state, replay
// memory) is freed once it is dropped. Resume training from a checkpoint.
type Freezer interface {
	Agent
	Freeze() Policy
}

// EmbeddingLearner is an Agent whose states end with a workload embedding
// that AWARE's meta learner trains through it: the learner trains with the
// current embedding and reports its loss's gradient with respect to it after
// each Update.
type EmbeddingLearner interface {
	Agent
	// SetEmbedding sets task's current embedding and makes task the
	// current one: transitions of a task are trained with its latest
	// embedding.
	SetEmbedding(task int, e []float64) error
	// EmbeddingGrad is the last Update's loss gradient with respect to the
	// current task's embedding, nil when there is none.
	EmbeddingGrad() []float64
}

// Constrained is an Agent trained under a constraint on the mean of a
// per-step cost by a Lagrange multiplier λ (reward-constrained policy
// optimisation, Tessler et al., ICLR 2019; the Lagrangian baselines of
// Safety Gym): it learns from r − λ·cost while λ rises as long as the
// cost exceeds its budget (Lagrangian.Update). λ is part of the agent's
// learnt state and of its checkpoint.
type Constrained interface {
	Agent
	Multiplier() float64
	SetMultiplier(lambda float64) error
}

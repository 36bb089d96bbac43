package ddpg

import "fmt"

// Config holds the agent's hyperparameters; the defaults are FIRM's (digest
// §2, Table 2). Use the With… options to change them.
type Config struct {
	Hidden            []int   // hidden layer widths of actor and critic
	ActorLR, CriticLR float64 // Adam learning rates
	Discount          float64 // γ
	Tau               float64 // Polyak coefficient of the target updates
	NoiseSigma        float64 // standard deviation of the exploration noise
	OU                bool    // Ornstein-Uhlenbeck instead of Gaussian noise
	OUTheta           float64 // OU mean-reversion rate
	EpsStart          float64 // initial noise scale ε
	EpsDecay          float64 // ε decrease per exploring Act
	EpsMin            float64 // lower bound of ε
	ReplayCapacity    int
	BatchSize         int
	WarmUp            int     // transitions required before the first update (≥ BatchSize)
	ClipNorm          float64 // global gradient-norm clip per network; ≤ 0 disables
	FinalInit         float64 // U(±FinalInit) init of the output layers
	// SquashPenalty c adds c·mean(u²) on the actor's pre-tanh outputs u
	// to its loss, so that actions cannot saturate at a bound where
	// tanh'(u) ≈ 0 leaves no gradient to bring them back. Not in FIRM.
	SquashPenalty float64
	// EmbedDim is how many of the state's last entries are a workload
	// embedding (AWARE's meta learner); with it Update also computes the
	// gradient of EmbedLoss with respect to the embedding (EmbeddingGrad).
	EmbedDim  int
	EmbedLoss EmbeddingLoss
}

// EmbeddingLoss is the loss whose gradient a DDPG agent hands to the meta
// learner.
type EmbeddingLoss int

const (
	// CriticLoss is the critic's TD loss: the embedding learns what tells
	// the applications' values apart. The default: with the actor loss
	// (alone or added) the embedding is pushed to where the critic rates
	// the actions highest, whatever the application, and its ReLU units
	// die (measured on the two tasks of evaluation/train
	// TestMetaRunLearnsTasksThroughTheEmbedding: all four embedding units
	// at zero for both tasks by round 50, and the agent unable to tell the
	// tasks apart; with CriticLoss it picks each task's CPU limit).
	CriticLoss EmbeddingLoss = iota
	// ActorLoss is the actor's loss −mean Q(s, μ(s)) (the paper's wording).
	ActorLoss
	// BothLosses is their sum.
	BothLosses
)

// DefaultConfig returns FIRM's configuration plus a squash penalty of 1e-3
// (WithSquashPenalty(0) for plain FIRM).
func DefaultConfig() Config {
	return Config{
		Hidden:  []int{40, 40},
		ActorLR: 3e-4, CriticLR: 3e-3,
		Discount: 0.99, Tau: 3e-3,
		NoiseSigma: 0.2, OUTheta: 0.15,
		EpsStart: 1, EpsDecay: 1e-6,
		ReplayCapacity: 1_000_000, BatchSize: 64,
		FinalInit: 3e-3, SquashPenalty: 1e-3,
	}
}

func (c Config) validate() error {
	if len(c.Hidden) == 0 {
		return fmt.Errorf("no hidden layers")
	}
	for _, h := range c.Hidden {
		if h <= 0 {
			return fmt.Errorf("hidden width %d must be positive", h)
		}
	}
	switch {
	case !(c.ActorLR > 0) || !(c.CriticLR > 0):
		return fmt.Errorf("learning rates %v and %v must be positive", c.ActorLR, c.CriticLR)
	case !(c.Discount >= 0 && c.Discount <= 1):
		return fmt.Errorf("discount %v outside [0, 1]", c.Discount)
	case !(c.Tau > 0 && c.Tau <= 1):
		return fmt.Errorf("tau %v outside (0, 1]", c.Tau)
	case !(c.NoiseSigma >= 0):
		return fmt.Errorf("noise sigma %v must be non-negative", c.NoiseSigma)
	case c.OU && !(c.OUTheta > 0 && c.OUTheta <= 1):
		return fmt.Errorf("OU theta %v outside (0, 1]", c.OUTheta)
	case !(c.EpsDecay >= 0) || !(c.EpsMin >= 0) || !(c.EpsStart >= c.EpsMin):
		return fmt.Errorf("epsilon start %v, decay %v, min %v: need start ≥ min ≥ 0 and decay ≥ 0", c.EpsStart, c.EpsDecay, c.EpsMin)
	case c.ReplayCapacity <= 0 || c.BatchSize <= 0:
		return fmt.Errorf("replay capacity %d and batch size %d must be positive", c.ReplayCapacity, c.BatchSize)
	case !(c.SquashPenalty >= 0):
		return fmt.Errorf("squash penalty %v must be non-negative", c.SquashPenalty)
	case c.EmbedDim < 0:
		return fmt.Errorf("embedding width %d must be non-negative", c.EmbedDim)
	case c.EmbedLoss < CriticLoss || c.EmbedLoss > BothLosses:
		return fmt.Errorf("embedding loss %d unknown", c.EmbedLoss)
	case !(c.FinalInit >= 0):
		return fmt.Errorf("final init %v must be non-negative", c.FinalInit)
	}
	return nil
}

// Option changes one knob of the configuration.
type Option func(*Config)

// WithHidden sets the hidden layer widths of both networks.
func WithHidden(widths ...int) Option {
	return func(c *Config) { c.Hidden = append([]int(nil), widths...) }
}

// WithLearningRates sets the actor and critic Adam learning rates.
func WithLearningRates(actor, critic float64) Option {
	return func(c *Config) { c.ActorLR, c.CriticLR = actor, critic }
}

// WithDiscount sets γ.
func WithDiscount(gamma float64) Option { return func(c *Config) { c.Discount = gamma } }

// WithTau sets the Polyak coefficient of the target updates.
func WithTau(tau float64) Option { return func(c *Config) { c.Tau = tau } }

// WithGaussianNoise uses N(0, σ²) exploration noise.
func WithGaussianNoise(sigma float64) Option {
	return func(c *Config) { c.OU, c.NoiseSigma = false, sigma }
}

// WithOUNoise uses Ornstein-Uhlenbeck noise x ← x − θx + σ·N(0, 1).
func WithOUNoise(theta, sigma float64) Option {
	return func(c *Config) { c.OU, c.OUTheta, c.NoiseSigma = true, theta, sigma }
}

// WithEpsilon sets the noise scale schedule ε ← max(min, ε − decay) per
// exploring step, starting at start.
func WithEpsilon(start, decay, min float64) Option {
	return func(c *Config) { c.EpsStart, c.EpsDecay, c.EpsMin = start, decay, min }
}

// WithReplay sets the replay capacity and the minibatch size.
func WithReplay(capacity, batch int) Option {
	return func(c *Config) { c.ReplayCapacity, c.BatchSize = capacity, batch }
}

// WithWarmUp sets how many transitions must be stored before updates start
// (never fewer than the minibatch size).
func WithWarmUp(n int) Option { return func(c *Config) { c.WarmUp = n } }

// WithGradClip clips each network's gradient to global norm max; ≤ 0 disables.
func WithGradClip(max float64) Option { return func(c *Config) { c.ClipNorm = max } }

// WithFinalInit sets the U(±v) initialisation of the output layers.
func WithFinalInit(v float64) Option { return func(c *Config) { c.FinalInit = v } }

// WithSquashPenalty sets the weight c of c·mean(u²) on the actor's pre-tanh
// outputs; 0 is FIRM's plain DDPG.
func WithSquashPenalty(c float64) Option { return func(cfg *Config) { cfg.SquashPenalty = c } }

// WithEmbedding marks the state's last dim entries as the workload
// embedding, so that Update computes loss's gradient with respect to it
// (EmbeddingGrad) for the meta learner.
func WithEmbedding(dim int, loss EmbeddingLoss) Option {
	return func(c *Config) { c.EmbedDim, c.EmbedLoss = dim, loss }
}

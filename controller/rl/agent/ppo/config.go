package ppo

import "fmt"

// Config holds the agent's hyperparameters; the defaults are the AWARE
// artifact's (digest §2) completed with the usual PPO defaults. Use the With…
// options to change them.
type Config struct {
	Hidden      []int   // hidden layer widths of actor and critic (tanh)
	LR          float64 // Adam learning rate of both networks (and the log-std)
	Discount    float64 // γ
	Lambda      float64 // GAE λ
	Epochs      int     // passes over the rollout per Update
	BatchSize   int     // minibatch size
	RolloutLen  int     // transitions collected before an Update trains
	Clip        float64 // surrogate clip range ε
	EntropyCoef float64 // weight of the entropy bonus
	ValueCoef   float64 // weight of the value loss
	ClipNorm    float64 // global gradient-norm clip per network; ≤ 0 disables
	NormAdv     bool    // normalise advantages per minibatch
	InitLogStd  float64 // initial log-std of the continuous head
	// EmbedDim is the width of the workload embedding that ends each state
	// (WithEmbedding; 0: none).
	EmbedDim int
}

// DefaultConfig returns the artifact's configuration, plus an initial
// log-std of −1 for the continuous head (σ ≈ 0.37 on the [−1, 1] box; with
// σ = 1 most samples are clipped at the bounds and the policy does not learn).
func DefaultConfig() Config {
	return Config{
		Hidden: []int{64, 64}, LR: 3e-4,
		Discount: 0.99, Lambda: 0.95,
		Epochs: 5, BatchSize: 64, RolloutLen: 100,
		Clip: 0.2, EntropyCoef: 0.01, ValueCoef: 0.5,
		ClipNorm: 0.5, NormAdv: true, InitLogStd: -1,
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
	case !(c.LR > 0):
		return fmt.Errorf("learning rate %v must be positive", c.LR)
	case !(c.Discount >= 0 && c.Discount <= 1):
		return fmt.Errorf("discount %v outside [0, 1]", c.Discount)
	case !(c.Lambda >= 0 && c.Lambda <= 1):
		return fmt.Errorf("GAE lambda %v outside [0, 1]", c.Lambda)
	case c.Epochs <= 0 || c.BatchSize <= 0 || c.RolloutLen <= 0:
		return fmt.Errorf("epochs %d, batch size %d and rollout length %d must be positive", c.Epochs, c.BatchSize, c.RolloutLen)
	case !(c.Clip > 0):
		return fmt.Errorf("clip range %v must be positive", c.Clip)
	case !(c.EntropyCoef >= 0) || !(c.ValueCoef > 0):
		return fmt.Errorf("entropy coefficient %v must be non-negative and value coefficient %v positive", c.EntropyCoef, c.ValueCoef)
	case c.EmbedDim < 0:
		return fmt.Errorf("embedding width %d must not be negative", c.EmbedDim)
	case c.InitLogStd != c.InitLogStd || c.InitLogStd > 5 || c.InitLogStd < -20:
		return fmt.Errorf("initial log-std %v outside [−20, 5]", c.InitLogStd)
	}
	return nil
}

// Option changes one knob of the configuration.
type Option func(*Config)

// WithHidden sets the hidden layer widths of both networks.
func WithHidden(widths ...int) Option {
	return func(c *Config) { c.Hidden = append([]int(nil), widths...) }
}

// WithLearningRate sets the Adam learning rate.
func WithLearningRate(lr float64) Option { return func(c *Config) { c.LR = lr } }

// WithDiscount sets γ.
func WithDiscount(gamma float64) Option { return func(c *Config) { c.Discount = gamma } }

// WithGAELambda sets the GAE λ.
func WithGAELambda(lambda float64) Option { return func(c *Config) { c.Lambda = lambda } }

// WithEmbedding says that the last dim entries of every state are the
// meta learner's workload embedding: Update trains each transition with its
// task's latest embedding (SetEmbedding) and EmbeddingGrad reports the
// gradient of the clipped-surrogate objective (with the entropy bonus; the
// value loss is the critic's own) with respect to the current task's.
func WithEmbedding(dim int) Option { return func(c *Config) { c.EmbedDim = dim } }

// WithEpochs sets the number of passes over each rollout.
func WithEpochs(n int) Option { return func(c *Config) { c.Epochs = n } }

// WithBatchSize sets the minibatch size.
func WithBatchSize(n int) Option { return func(c *Config) { c.BatchSize = n } }

// WithRolloutLen sets how many transitions are collected per Update.
func WithRolloutLen(n int) Option { return func(c *Config) { c.RolloutLen = n } }

// WithClip sets the surrogate clip range ε.
func WithClip(eps float64) Option { return func(c *Config) { c.Clip = eps } }

// WithCoefficients sets the entropy and value-loss weights.
func WithCoefficients(entropy, value float64) Option {
	return func(c *Config) { c.EntropyCoef, c.ValueCoef = entropy, value }
}

// WithGradClip clips each network's gradient to global norm max; ≤ 0 disables.
func WithGradClip(max float64) Option { return func(c *Config) { c.ClipNorm = max } }

// WithAdvantageNorm switches per-minibatch advantage normalisation.
func WithAdvantageNorm(on bool) Option { return func(c *Config) { c.NormAdv = on } }

// WithInitLogStd sets the continuous head's initial log-std.
func WithInitLogStd(v float64) Option { return func(c *Config) { c.InitLogStd = v } }

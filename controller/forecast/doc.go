// Package forecast predicts an application's load a few steps ahead from
// its history: a seasonal autoregressive model fitted by least squares on
// the logarithm of the rate (so that a daily pattern scales with the level),
// refitted as the history grows. TL+ (paper §5.2), the transfer-learning
// baseline that AWARE is compared with, adds its one-step forecast to the
// agent's state. The package is pure numeric code on gonum; it does not log.
package forecast

package ppo

import "math"

const halfLog2Pi = 0.9189385332046727 // ½·log(2π)

// GAE writes the generalised advantage estimates and the value targets
// (advantage + value) of one rollout into adv and ret:
// δ_t = r_t + γ(1−done_t)·V(next_t) − V(s_t) and A_t = δ_t + γλ·A_{t+1}, where
// the recursion restarts after a terminal step (done) or a trajectory break
// (end, e.g. a time-limit truncation or the rollout's last step, which still
// bootstraps from nextValues). end may be nil. All slices have one entry per
// step.
func GAE(adv, ret, rewards, values, nextValues []float64, done, end []bool, gamma, lambda float64) {
	var next float64
	for t := len(rewards) - 1; t >= 0; t-- {
		nonTerminal := 1.0
		if done[t] {
			nonTerminal = 0
		}
		if done[t] || t == len(rewards)-1 || (end != nil && end[t]) {
			next = 0
		}
		delta := rewards[t] + gamma*nonTerminal*nextValues[t] - values[t]
		next = delta + gamma*lambda*next
		adv[t] = next
		ret[t] = next + values[t]
	}
}

// surrogateGrad returns the clipped surrogate −min(ρA, clip(ρ, 1±ε)A) for log
// ratio logRatio and its derivative with respect to the new log-probability,
// and whether the clipped branch was active.
func surrogateGrad(logRatio, adv, eps float64) (loss, dlogp float64, clipped bool) {
	r := math.Exp(logRatio)
	u := r * adv
	c := max(1-eps, min(1+eps, r)) * adv
	if u <= c {
		return -u, -u, false
	}
	return -c, 0, true
}

// categoricalLoss computes the mean over the batch of the clipped surrogate
// minus entCoef times the entropy for logits (B×N), chosen actions, old
// log-probabilities and advantages, writes ∂loss/∂logits into dlogits and
// returns the mean surrogate loss, mean entropy and the fraction of clipped
// samples. probs is a B×N workspace.
func categoricalLoss(dlogits, probs, logits []float64, actions []int, oldLogp, adv []float64, n int, eps, entCoef float64) (surr, ent, clipFrac float64) {
	b := len(actions)
	inv := 1 / float64(b)
	for k, a := range actions {
		z, p, d := logits[k*n:(k+1)*n], probs[k*n:(k+1)*n], dlogits[k*n:(k+1)*n]
		logSoftmax(p, z) // p holds log-probabilities
		var h float64
		for _, lp := range p {
			h -= math.Exp(lp) * lp
		}
		l, g, c := surrogateGrad(p[a]-oldLogp[k], adv[k], eps)
		surr += l
		ent += h
		if c {
			clipFrac++
		}
		for j, lp := range p {
			pj := math.Exp(lp)
			ind := 0.0
			if j == a {
				ind = 1
			}
			// ∂(−surr)/∂z_j = g·(1[j=a] − p_j); ∂H/∂z_j = −p_j(log p_j + H).
			d[j] = inv * (g*(ind-pj) + entCoef*pj*(lp+h))
		}
	}
	return surr * inv, ent * inv, clipFrac * inv
}

// logSoftmax writes log softmax(z) into dst and returns log Σ exp z.
func logSoftmax(dst, z []float64) float64 {
	m := z[0]
	for _, v := range z[1:] {
		m = max(m, v)
	}
	var s float64
	for _, v := range z {
		s += math.Exp(v - m)
	}
	lse := m + math.Log(s)
	for j, v := range z {
		dst[j] = v - lse
	}
	return lse
}

// gaussianLogp returns the log-density of u under N(mu, exp(logStd)²) with a
// diagonal covariance.
func gaussianLogp(u, mu, logStd []float64) float64 {
	var lp float64
	for i, m := range mu {
		z := (u[i] - m) * math.Exp(-logStd[i])
		lp -= 0.5*z*z + logStd[i] + halfLog2Pi
	}
	return lp
}

// gaussianLoss computes the mean clipped surrogate minus entCoef times the
// entropy for means (B×A), the shared log-std (A), raw (unclipped) actions
// (B×A), old log-probabilities and advantages; it writes ∂loss/∂means into
// dmu and adds ∂loss/∂logStd to dlogStd, returning the mean surrogate loss,
// the entropy and the fraction of clipped samples.
func gaussianLoss(dmu, dlogStd, mu, logStd, actions, oldLogp, adv []float64, eps, entCoef float64) (surr, ent, clipFrac float64) {
	a := len(logStd)
	b := len(oldLogp)
	inv := 1 / float64(b)
	for i, ls := range logStd {
		ent += ls + 0.5 + halfLog2Pi
		dlogStd[i] -= entCoef
	}
	for k := range b {
		m, u, d := mu[k*a:(k+1)*a], actions[k*a:(k+1)*a], dmu[k*a:(k+1)*a]
		l, g, c := surrogateGrad(gaussianLogp(u, m, logStd)-oldLogp[k], adv[k], eps)
		surr += l
		if c {
			clipFrac++
		}
		for i, ls := range logStd {
			iv := math.Exp(-2 * ls)
			diff := u[i] - m[i]
			// ∂logp/∂μ = (u−μ)/σ², ∂logp/∂logσ = (u−μ)²/σ² − 1.
			d[i] = inv * g * diff * iv
			dlogStd[i] += inv * g * (diff*diff*iv - 1)
		}
	}
	return surr * inv, ent, clipFrac * inv
}

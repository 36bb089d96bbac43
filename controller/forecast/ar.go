package forecast

import (
	"errors"
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"
)

// Config is the shape of a seasonal AR model of log(1+y):
//
//	x_t = c + Σ_{i=1..Order} φ_i x_{t−i} + Σ_{j=1..Seasons} Φ_j x_{t−j·Period} + ε_t
type Config struct {
	// Order is the number of recent lags (p ≥ 1).
	Order int
	// Seasons is the number of seasonal lags (P ≥ 0); Period their spacing
	// in steps (s > Order when Seasons > 0: a day of 30 s steps is 2880).
	Seasons, Period int
	// Ridge is the L2 penalty on the coefficients, relative to the mean
	// squared regressor (default 1e-6): it keeps a flat history solvable.
	Ridge float64
}

// ErrShort is returned when a history is too short to fit the model.
var ErrShort = errors.New("forecast: history too short")

func (c Config) validate() error {
	switch {
	case c.Order < 1:
		return fmt.Errorf("forecast: order %d must be at least 1", c.Order)
	case c.Seasons < 0:
		return fmt.Errorf("forecast: seasons %d must not be negative", c.Seasons)
	case c.Seasons > 0 && c.Period <= c.Order:
		return fmt.Errorf("forecast: period %d must exceed the order %d", c.Period, c.Order)
	case c.Ridge < 0 || math.IsNaN(c.Ridge):
		return fmt.Errorf("forecast: ridge %g must not be negative", c.Ridge)
	}
	return nil
}

// lags is the longest lag the model reads.
func (c Config) lags() int {
	if c.Seasons > 0 {
		return c.Seasons * c.Period
	}
	return c.Order
}

// coefs is the number of coefficients, the intercept included.
func (c Config) coefs() int { return 1 + c.Order + c.Seasons }

// MinHistory is the shortest history Fit accepts: the longest lag plus
// twice as many rows as coefficients.
func (c Config) MinHistory() int { return c.lags() + 2*c.coefs() }

// Model is a fitted seasonal AR model.
type Model struct {
	cfg Config
	// Coef is [c, φ_1..φ_p, Φ_1..Φ_P].
	Coef []float64
	// Sigma is the residuals' standard deviation, in log(1+y) units.
	Sigma float64
}

// Config returns the model's shape.
func (m *Model) Config() Config { return m.cfg }

// Fit fits cfg to the series y (non-negative rates, oldest first) by
// ridge-regularised least squares over every step whose lags y holds.
func Fit(cfg Config, y []float64) (*Model, error) {
	if cfg.Ridge == 0 {
		cfg.Ridge = 1e-6
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if len(y) < cfg.MinHistory() {
		return nil, fmt.Errorf("%w: %d values, the model needs %d", ErrShort, len(y), cfg.MinHistory())
	}
	x, err := logs(y)
	if err != nil {
		return nil, err
	}
	L, k := cfg.lags(), cfg.coefs()
	rows := len(x) - L
	X := mat.NewDense(rows, k, nil)
	b := mat.NewVecDense(rows, nil)
	row := make([]float64, k)
	var ss float64
	for r := range rows {
		t := L + r
		regressors(row, cfg, x, t)
		X.SetRow(r, row)
		b.SetVec(r, x[t])
		for _, v := range row[1:] {
			ss += v * v
		}
	}
	// (XᵀX + λI) β = Xᵀb, λ relative to the mean squared regressor; the
	// intercept is not penalised.
	var A mat.SymDense
	A.SymOuterK(1, X.T())
	lambda := cfg.Ridge * math.Max(ss/float64(rows*(k-1)), 1e-12) * float64(rows)
	for i := 1; i < k; i++ {
		A.SetSym(i, i, A.At(i, i)+lambda)
	}
	var rhs mat.VecDense
	rhs.MulVec(X.T(), b)
	var chol mat.Cholesky
	if !chol.Factorize(&A) {
		return nil, errors.New("forecast: normal equations are not positive definite")
	}
	var beta mat.VecDense
	if err := chol.SolveVecTo(&beta, &rhs); err != nil {
		return nil, fmt.Errorf("forecast: %w", err)
	}
	m := &Model{cfg: cfg, Coef: make([]float64, k)}
	for i := range k {
		m.Coef[i] = beta.AtVec(i)
	}
	var res float64
	for r := range rows {
		d := b.AtVec(r) - mat.Dot(X.RowView(r), &beta)
		res += d * d
	}
	m.Sigma = math.Sqrt(res / float64(max(rows-k, 1)))
	return m, nil
}

// regressors writes the intercept and the lags of x at step t to dst.
func regressors(dst []float64, cfg Config, x []float64, t int) {
	dst[0] = 1
	for i := 1; i <= cfg.Order; i++ {
		dst[i] = x[t-i]
	}
	for j := 1; j <= cfg.Seasons; j++ {
		dst[cfg.Order+j] = x[t-j*cfg.Period]
	}
}

// Forecast writes the forecasts of the next len(dst) steps after the
// history y (at least the model's longest lag) to dst and returns it:
// recursive, each forecast feeding the later ones' lags, never negative.
func (m *Model) Forecast(dst, y []float64) ([]float64, error) {
	L := m.cfg.lags()
	if len(y) < L {
		return nil, fmt.Errorf("%w: %d values, forecasting needs the last %d", ErrShort, len(y), L)
	}
	x, err := logs(y[len(y)-L:])
	if err != nil {
		return nil, err
	}
	x = append(x, make([]float64, len(dst))...)
	row := make([]float64, m.cfg.coefs())
	for h := range dst {
		t := L + h
		regressors(row, m.cfg, x, t)
		var v float64
		for i, c := range m.Coef {
			v += c * row[i]
		}
		x[t] = v
		dst[h] = math.Max(math.Expm1(v), 0)
	}
	return dst, nil
}

// logs returns log(1+y), refusing negative and non-finite values.
func logs(y []float64) ([]float64, error) {
	x := make([]float64, len(y))
	for i, v := range y {
		if !(v >= 0) || math.IsInf(v, 1) {
			return nil, fmt.Errorf("forecast: value %d is %v: rates must be finite and not negative", i, v)
		}
		x[i] = math.Log1p(v)
	}
	return x, nil
}

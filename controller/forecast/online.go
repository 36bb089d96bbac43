package forecast

import (
	"fmt"
	"math"
)

// Online forecasts a rate observed one step at a time. It keeps the last
// Window values and refits every Refit observations: the seasonal model
// once the history holds its MinHistory, before that the model without
// its seasonal lags, and before even that the last value (the naive
// forecast).
type Online struct {
	cfg           Config
	window, refit int
	hist          []float64
	since         int // observations since the last fit
	model         *Model
	next          float64
	buf           [1]float64
}

// NewOnline returns an Online forecaster of shape cfg keeping window
// values (at least cfg.MinHistory()) and refitting every refit
// observations.
func NewOnline(cfg Config, window, refit int) (*Online, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if window < cfg.MinHistory() {
		return nil, fmt.Errorf("forecast: window %d is shorter than the model's history %d", window, cfg.MinHistory())
	}
	if refit < 1 {
		return nil, fmt.Errorf("forecast: refit %d must be at least 1", refit)
	}
	return &Online{cfg: cfg, window: window, refit: refit}, nil
}

// Observe adds the newest value and updates the one-step forecast.
func (o *Online) Observe(y float64) error {
	if !(y >= 0) || math.IsInf(y, 1) {
		return fmt.Errorf("forecast: observed %v: rates must be finite and not negative", y)
	}
	if len(o.hist) == o.window {
		copy(o.hist, o.hist[1:])
		o.hist = o.hist[:len(o.hist)-1]
	}
	o.hist = append(o.hist, y)
	o.since++
	if o.model == nil || o.since >= o.refit || o.model.cfg.Seasons < o.cfg.Seasons && len(o.hist) >= o.cfg.MinHistory() {
		o.fit()
	}
	o.next = y
	if o.model != nil {
		if f, err := o.model.Forecast(o.buf[:], o.hist); err == nil {
			o.next = f[0]
		}
	}
	return nil
}

// fit refits the richest model the history allows; with too short a
// history the model stays nil (naive forecasts).
func (o *Online) fit() {
	cfgs := []Config{o.cfg}
	if o.cfg.Seasons > 0 {
		plain := o.cfg
		plain.Seasons, plain.Period = 0, 0
		cfgs = append(cfgs, plain)
	}
	for _, c := range cfgs {
		if len(o.hist) < c.MinHistory() {
			continue
		}
		if m, err := Fit(c, o.hist); err == nil {
			o.model, o.since = m, 0
			return
		}
	}
}

// Next is the forecast of the next value (the last value until a model
// could be fitted; 0 before any observation).
func (o *Online) Next() float64 { return o.next }

// Len is the number of values held.
func (o *Online) Len() int { return len(o.hist) }

// Seasonal reports whether the current forecast uses the seasonal lags.
func (o *Online) Seasonal() bool { return o.model != nil && o.model.cfg.Seasons > 0 }

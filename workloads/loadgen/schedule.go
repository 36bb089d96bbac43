package loadgen

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"time"
)

// Schedule is what the generator replays: request arrival offsets from the
// start of the run, sorted ascending, within [0, Length).
type Schedule struct {
	Arrivals []time.Duration
	// Length is the schedule's nominal duration (a window of a trace); it
	// may extend past the last arrival.
	Length time.Duration
}

// NewSchedule validates arrivals and length and returns the schedule.
func NewSchedule(arrivals []time.Duration, length time.Duration) (Schedule, error) {
	s := Schedule{Arrivals: arrivals, Length: length}
	return s, s.Validate()
}

// Validate checks that Length is positive and arrivals are sorted and within
// [0, Length).
func (s Schedule) Validate() error {
	if s.Length <= 0 {
		return fmt.Errorf("schedule: length %s must be positive", s.Length)
	}
	for i, a := range s.Arrivals {
		switch {
		case a < 0:
			return fmt.Errorf("schedule: arrivals[%d] = %s is negative", i, a)
		case a >= s.Length:
			return fmt.Errorf("schedule: arrivals[%d] = %s is not before the length %s", i, a, s.Length)
		case i > 0 && a < s.Arrivals[i-1]:
			return fmt.Errorf("schedule: arrivals[%d] = %s is before arrivals[%d] = %s (must be sorted)", i, a, i-1, s.Arrivals[i-1])
		}
	}
	return nil
}

// Rate is the schedule's mean arrival rate in requests per second.
func (s Schedule) Rate() float64 {
	if s.Length <= 0 {
		return 0
	}
	return float64(len(s.Arrivals)) / s.Length.Seconds()
}

// maxArrivals bounds generated schedules (8 bytes each) to keep a typo in a
// rate or length from exhausting memory.
const maxArrivals = 1 << 28

func checkRate(rate float64, length time.Duration) (int, error) {
	var errs []error
	if !(rate > 0) || math.IsInf(rate, 0) {
		errs = append(errs, fmt.Errorf("rate %v must be a positive number of requests per second", rate))
	}
	if length <= 0 {
		errs = append(errs, fmt.Errorf("length %s must be positive", length))
	}
	if err := errors.Join(errs...); err != nil {
		return 0, fmt.Errorf("schedule: %w", err)
	}
	n := rate * length.Seconds()
	if n > maxArrivals {
		return 0, fmt.Errorf("schedule: %v req/s for %s is %.3g arrivals, more than the limit %d", rate, length, n, maxArrivals)
	}
	return int(math.Round(n)), nil
}

// Constant returns round(rate*length) arrivals evenly spaced over length.
func Constant(rate float64, length time.Duration) (Schedule, error) {
	n, err := checkRate(rate, length)
	if err != nil {
		return Schedule{}, err
	}
	arr := make([]time.Duration, n)
	for i := range arr {
		arr[i] = time.Duration(float64(i) * float64(length) / float64(n))
	}
	return Schedule{Arrivals: arr, Length: length}, nil
}

// Poisson returns a homogeneous Poisson process of the given rate over
// length (exponential inter-arrival times), seeded for reproducibility.
func Poisson(rate float64, length time.Duration, seed uint64) (Schedule, error) {
	n, err := checkRate(rate, length)
	if err != nil {
		return Schedule{}, err
	}
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	arr := make([]time.Duration, 0, n+4*int(math.Sqrt(float64(n)))+1)
	t := 0.0
	for {
		t += r.ExpFloat64() / rate
		at := time.Duration(t * float64(time.Second))
		if at >= length {
			break
		}
		arr = append(arr, at)
	}
	return Schedule{Arrivals: arr, Length: length}, nil
}

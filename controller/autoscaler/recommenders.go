package autoscaler

import (
	"fmt"
	"sync"
	"time"

	"github.com/aware-autoscaler/aware/controller/api/v1alpha1"
	"github.com/aware-autoscaler/aware/controller/recommender"
	"github.com/aware-autoscaler/aware/controller/recommender/hpa"
	"github.com/aware-autoscaler/aware/controller/recommender/mpa"
	"github.com/aware-autoscaler/aware/controller/recommender/vpa"
)

// RecommenderConfig is what the controller builds an MPA's recommender
// from.
type RecommenderConfig struct {
	// Policy is the MPA's spec, defaulted and checked: Bounds, CPUTarget
	// (spec.metrics or the agent profile), Behavior (the HPA behaviour),
	// the scaled Container and resources, the Agent profile.
	Policy Policy
	// Step is the time between two Recommend calls: the controller's
	// step (WithStep) in simulated time, its wall step times the time
	// scale (WithTimeScale; the same on a real cluster).
	Step time.Duration
	// VPAInterval is how often the built-in VPA recomputes its
	// recommendation (WithVPARecommenderInterval), in the recommender's
	// (simulated) time.
	VPAInterval time.Duration
}

// RecommenderFactory builds the recommender of one MPA whose
// spec.recommenders names it. The controller calls New when it first steps
// the MPA and again at each new spec; the recommender then gets every
// step's observation and its recommendation acts, within the MPA's bounds
// and update mode, as the default HPA+VPA's does. It mirrors
// baselines.Factory, which chooses a recommender in simulation.
type RecommenderFactory struct {
	Name string
	New  func(c RecommenderConfig) (recommender.Recommender, error)
}

// defaultRecommender is the built-in HPA+VPA (mpa.New), chosen by
// v1alpha1.DefaultRecommenderName (an MPA without spec.recommenders) and
// run as the fallback of every external recommender.
var defaultRecommender = RecommenderFactory{Name: v1alpha1.DefaultRecommenderName, New: func(c RecommenderConfig) (recommender.Recommender, error) {
	p := c.Policy
	m, err := mpa.New(p.Bounds, c.Step, mpa.WithHPA(hpa.WithTarget(p.CPUTarget), hpa.WithBehavior(p.Behavior)),
		mpa.WithVPA(vpa.WithRecommenderInterval(c.VPAInterval)))
	if err != nil {
		return nil, err
	}
	return m, nil
}}

var (
	recommendersMu sync.RWMutex
	registered     []RecommenderFactory
)

// RegisterRecommender adds a recommender the controller builds in process
// (docs/extending.md): an MPA whose spec.recommenders names it gets it,
// instead of waiting for an external recommender to write its status. Call
// it before the controller starts (an init function). It panics on an
// empty or taken name or no New: programming errors, as with
// database/sql.Register.
func RegisterRecommender(f RecommenderFactory) {
	recommendersMu.Lock()
	defer recommendersMu.Unlock()
	if f.Name == "" || f.New == nil {
		panic(fmt.Sprintf("autoscaler: RegisterRecommender %q: name and New are required", f.Name))
	}
	if f.Name == defaultRecommender.Name || findRegistered(f.Name) != nil {
		panic("autoscaler: recommender " + f.Name + " registered twice")
	}
	registered = append(registered, f)
}

// FindRecommender returns the recommender the controller builds for name:
// the default or a registered one; false for a name an external
// recommender serves.
func FindRecommender(name string) (RecommenderFactory, bool) {
	if name == defaultRecommender.Name {
		return defaultRecommender, true
	}
	recommendersMu.RLock()
	defer recommendersMu.RUnlock()
	if f := findRegistered(name); f != nil {
		return *f, true
	}
	return RecommenderFactory{}, false
}

// Recommenders are the recommenders the controller builds: the default,
// then the registered ones in registration order.
func Recommenders() []RecommenderFactory {
	recommendersMu.RLock()
	defer recommendersMu.RUnlock()
	return append([]RecommenderFactory{defaultRecommender}, registered...)
}

func findRegistered(name string) *RecommenderFactory {
	for i := range registered {
		if registered[i].Name == name {
			return &registered[i]
		}
	}
	return nil
}

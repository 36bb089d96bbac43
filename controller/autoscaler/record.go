package autoscaler

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/aware-autoscaler/aware/controller/api/v1alpha1"
	"github.com/aware-autoscaler/aware/controller/trajectory"
	"github.com/aware-autoscaler/aware/gym"
)

// record is the record phase: the step's measurements evaluated as the
// simulator evaluates them (state and reward), and, for an MPA with an
// agent profile, the previous step's trajectory record completed with the
// reward (the lifecycle advancing at the end of an episode). It returns
// this step's state, which decide keeps with the step's action for the
// next record.
func (r *Reconciler) record(ctx context.Context, m *v1alpha1.MultidimPodAutoscaler, pol Policy, st *mpaState, met gym.Metrics, now time.Time, log *slog.Logger) []float64 {
	ev := Evaluate(pol, met, st.prevArrival)
	st.prevArrival = met.ArrivalRate
	if pol.Agent != nil {
		recorded := time.Now()
		err := r.appendStep(ctx, m, pol, st, ev.Reward, now)
		r.cfg.metrics.phase.WithLabelValues("record").Observe(time.Since(recorded).Seconds())
		if err != nil {
			r.cfg.metrics.errors.WithLabelValues("store").Inc()
			log.Warn("trajectory not recorded", "err", err)
		}
	}
	return ev.State
}

// appendStep appends the trajectory step that the reward just observed
// completes, and at the end of an episode advances the lifecycle.
func (r *Reconciler) appendStep(ctx context.Context, m *v1alpha1.MultidimPodAutoscaler, pol Policy, st *mpaState, reward float64, now time.Time) error {
	ag := m.Status.Agent
	r.cfg.metrics.reward.WithLabelValues(m.Namespace, m.Name).Set(reward)
	if st.prevState == nil || r.store == nil {
		return nil
	}
	app := m.Namespace + "/" + m.Name
	if !st.resumed {
		r.resume(ctx, app, st, ag, pol.Agent.EpisodeLength, now)
	}
	done := st.t+1 >= pol.Agent.EpisodeLength
	s := trajectory.Step{App: app, Episode: st.episode, T: st.t, Time: now, State: st.prevState,
		Action: st.prevAction, Reward: reward, Done: done, Stage: string(ag.Stage)}
	err := r.store.Append(ctx, s)
	if errors.Is(err, trajectory.ErrInvalid) {
		// The store disagrees about where the episode stands: steps
		// buffered before a crash never became durable, or the store
		// could not be read at the restart. The episode is abandoned (it
		// stays incomplete in the store, outside every episode statistic)
		// and the next one starts with this step, instead of every later
		// step being refused.
		r.cfg.log.Warn("trajectory store out of step with the controller; starting a new episode",
			"mpa", app, "episode", st.episode, "step", st.t, "err", err)
		r.cfg.metrics.abandoned.Inc()
		st.episode, st.t = st.episode+1, 0
		done = pol.Agent.EpisodeLength <= 1
		s.Episode, s.T, s.Done = st.episode, 0, done
		err = r.store.Append(ctx, s)
	}
	if err != nil {
		return fmt.Errorf("trajectory %s episode %d step %d: %w", app, st.episode, st.t, err)
	}
	r.cfg.metrics.recorded.Inc()
	st.t++
	if !done {
		return nil
	}
	st.episode, st.t = st.episode+1, 0
	ag.Episode = st.episode
	return r.endEpisode(ctx, m, pol, app, now)
}

// resume restores where the MPA's episode stands after a (re)start from
// the trajectory store: the episode in status.agent (written when an
// episode ends), continued at the step after the last one recorded if the
// store holds that episode unfinished, else the next episode. A store that
// cannot be read leaves status's episode at step 0; Append then refuses
// the step if the store has it, and record starts the next episode.
func (r *Reconciler) resume(ctx context.Context, app string, st *mpaState, ag *v1alpha1.AgentStatus, episodeLen int, now time.Time) {
	st.resumed = true
	st.episode, st.t = ag.Episode, 0
	window := time.Duration(episodeLen+2) * r.cfg.step
	trs, err := r.store.Range(ctx, app, now.Add(-window), now)
	if err != nil {
		r.cfg.log.Warn("where the episode stands could not be read from the trajectory store", "mpa", app, "err", err)
		return
	}
	if len(trs) == 0 {
		return
	}
	last := trs[len(trs)-1]
	if last.Episode.Episode < ag.Episode || len(last.Steps) == 0 {
		return
	}
	end := last.Steps[len(last.Steps)-1]
	if end.Done {
		st.episode = last.Episode.Episode + 1
		return
	}
	st.episode, st.t = last.Episode.Episode, end.T+1
	if last.Steps[0].T != 0 {
		// The episode began before the window: its earlier steps are
		// too far back to continue it; start the next one.
		st.episode, st.t = last.Episode.Episode+1, 0
	}
}

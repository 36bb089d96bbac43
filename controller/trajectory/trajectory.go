package trajectory

import (
	"context"
	"errors"
	"time"
)

// Step is one RL time step of one application's agent.
//
// Append checks each step: App is non-empty UTF-8 without control
// characters or backslashes; Episode and T are non-negative; Time is set
// and within Unix nanoseconds (years 1678 to 2262); Reward, State and
// Action are finite, Action non-empty, and the lengths of State and Action
// are those of the application's first step; Stage has no control
// characters. Steps of one application come in order: episodes with
// increasing numbers, each starting at T = 0 and counting up by one, Time
// strictly increasing (step times are unique per application; the InfluxDB
// backend uses them as point timestamps), and nothing after an episode's
// Done step. An episode left without its Done step (say, after a restart)
// stays incomplete; the next episode number starts a new one. Stores return
// Time in UTC.
type Step struct {
	App     string    // the MPA's "namespace/name"
	Episode int64     // episode number, increasing per app
	T       int       // step index within the episode, from 0
	Time    time.Time // when the step ended
	State   []float64 // observation the action was taken in
	Action  []float64 // [replicas, cpu cores, memory bytes]
	Reward  float64
	Done    bool   // last step of its episode (terminated or truncated)
	Stage   string // agent stage when taken (OFFLINE, ONLINE, SERVING), informative
}

// Episode summarises one episode of one application. From RecentEpisodes
// and Top it describes the whole (complete) episode; in a trajectory
// returned by Range it describes the steps returned.
type Episode struct {
	App     string
	Episode int64
	Start   time.Time // Time of the first step
	End     time.Time // Time of the last step
	Steps   int       // number of steps
	Reward  float64   // sum of the step rewards
}

// Trajectory is an episode with its steps, oldest first.
type Trajectory struct {
	Episode
	Steps []Step
}

// Store keeps the steps of every application's agent. Only episodes whose
// Done step was appended are complete; RecentEpisodes and Top see complete
// episodes only, Range sees every step. Unknown applications yield empty
// results, not errors. Implementations are safe for concurrent use.
type Store interface {
	// Append validates the steps and adds them, all or none: an invalid
	// step rejects the whole call with an error matching ErrInvalid that
	// names the step (index, app, episode, T) and the field.
	Append(ctx context.Context, steps ...Step) error
	// Flush makes what was appended durable (FileStore) or delivered or
	// safely spooled to local disk (InfluxStore; see ErrSpooled).
	Flush(ctx context.Context) error
	// RecentEpisodes returns the last n complete episodes of app, oldest
	// first (fewer if app has fewer).
	RecentEpisodes(ctx context.Context, app string, n int) ([]Episode, error)
	// Top returns the m complete episodes of app with the highest reward,
	// best first, with their steps. Equal rewards are ordered by episode
	// number, the more recent (higher) first.
	Top(ctx context.Context, app string, m int) ([]Trajectory, error)
	// Range returns every trajectory of app with steps whose Time lies in
	// [from, to), including incomplete episodes, by episode number, each
	// clipped to the steps in the range.
	Range(ctx context.Context, app string, from, to time.Time) ([]Trajectory, error)
	// Apps returns the applications with at least one step, sorted.
	Apps(ctx context.Context) ([]string, error)
	// Close flushes and releases the store; later calls fail with ErrClosed.
	Close() error
}

var (
	// ErrInvalid marks a step Append refuses: a bad field or a step out
	// of order.
	ErrInvalid = errors.New("invalid trajectory step")
	// ErrClosed is returned by a store's methods after Close.
	ErrClosed = errors.New("trajectory store closed")
	// ErrLocked is returned by OpenFile and OpenInflux when another store
	// (in this or another process) holds the directory.
	ErrLocked = errors.New("trajectory directory locked by another store")
	// ErrCorrupt reports a record that fails its checksum or does not
	// decode where a valid one was expected (not a torn tail, which is
	// repaired at open).
	ErrCorrupt = errors.New("corrupt trajectory record")
	// ErrSpooled is returned (wrapped) by InfluxStore.Flush when some steps
	// could not be delivered to InfluxDB and are held in the local spool,
	// durably, to be retried: nothing is lost, but InfluxDB is behind.
	ErrSpooled = errors.New("trajectory steps spooled locally: InfluxDB unreachable")
	// ErrRejected is returned (wrapped) by InfluxStore.Flush when InfluxDB
	// refused a batch as bad data (HTTP 4xx); the batch is kept in the
	// spool directory's rejected.lp and not retried.
	ErrRejected = errors.New("InfluxDB rejected trajectory points")
	// ErrUnavailable is returned by InfluxStore when an operation needs
	// InfluxDB and it cannot be reached.
	ErrUnavailable = errors.New("InfluxDB unavailable")
)

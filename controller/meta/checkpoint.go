package meta

import (
	"fmt"
	"slices"

	"github.com/aware-autoscaler/aware/controller/rl"
)

// checkpointVersion is the layout of FLASH checkpoints written; Load reads
// it and version 1, whose trajectory heads were in the JSON metadata (which
// outgrew the metadata limit at 800 tasks of 19 trajectories).
const checkpointVersion = 2

// flashMeta is a FLASH checkpoint's JSON metadata: everything but the
// vectors, which are entries of the rl.Checkpoint.
type flashMeta struct {
	Version   int         `json:"version"`
	Network   Config      `json:"network"`
	Selection string      `json:"selection"`
	M         int         `json:"m"`
	Steps     int         `json:"steps"`
	Capacity  int         `json:"capacity"`
	TTL       int         `json:"ttl"`
	Updates   bool        `json:"metaUpdates"`
	Tasks     []taskState `json:"tasks"`
	// User is the caller's own state (a training run's round and seed).
	User any `json:"user,omitempty"`
}

// taskState is one task's buffer without its elements. From version 2 the
// trajectories' heads are the entry "heads/<task>" (headLen values each)
// and Items is empty.
type taskState struct {
	Task     Task             `json:"task"`
	Episodes int              `json:"episodes"`
	Now      int              `json:"now"`
	Items    []trajectoryHead `json:"items,omitempty"`
	// Trajectories is the number of buffered trajectories (version 2).
	Trajectories int `json:"trajectories,omitempty"`
}

// headLen is the values of a trajectoryHead in a "heads/<task>" entry:
// steps, reward, episode, end.
const headLen = 4

type trajectoryHead struct {
	Steps   int     `json:"steps"`
	Reward  float64 `json:"reward"`
	Episode int     `json:"episode"`
	End     int     `json:"end"`
}

// Save writes the meta learner (the embedder's weights and Adam states),
// every registered task with its trajectory buffer, whether meta updates are
// on, and user (any JSON-encodable value, nil for none) to path atomically:
// what a meta-training run needs to resume, and what a frozen meta learner
// needs to embed. Pending gradient is applied first (Step), so that none is
// lost.
func (f *FLASH) Save(path string, user any) error {
	if f.updates {
		f.Step()
	}
	c := rl.NewCheckpoint()
	m := flashMeta{Version: checkpointVersion, Network: f.emb.cfg, Selection: f.opts.Selection.String(), M: f.opts.M,
		Steps: f.opts.Steps, Capacity: f.opts.Capacity, TTL: f.opts.TTL, Updates: f.updates, User: user}
	for i, p := range f.emb.Params() {
		c.PutParams(fmt.Sprintf("embedder/%d", i), p)
		c.PutAdam(fmt.Sprintf("adam/%d", i), f.opt[i])
		if f.contrastOpt != nil {
			c.PutAdam(fmt.Sprintf("contrast-adam/%d", i), f.contrastOpt[i])
		}
	}
	for _, name := range f.taskNames() {
		t := f.tasks[name]
		st := taskState{Task: t.Task, Episodes: t.episodes, Now: t.buf.now, Trajectories: len(t.buf.items)}
		heads := make([]float64, 0, headLen*len(t.buf.items))
		for j, it := range t.buf.items {
			heads = append(heads, float64(it.Steps), it.Reward, float64(it.Episode), float64(it.end))
			c.Put(fmt.Sprintf("task/%s/%d", name, j), it.Elements)
		}
		c.Put("heads/"+name, heads)
		m.Tasks = append(m.Tasks, st)
	}
	if err := c.SetMeta(m); err != nil {
		return fmt.Errorf("meta: Save: %w", err)
	}
	if err := rl.WriteCheckpoint(path, c); err != nil {
		return fmt.Errorf("meta: Save: %w", err)
	}
	return nil
}

// Tasks are the registered tasks' names in name order.
func (f *FLASH) Tasks() []string { return f.taskNames() }

// taskNames are the registered tasks in name order (a checkpoint's order).
func (f *FLASH) taskNames() []string {
	names := make([]string, 0, len(f.tasks))
	for n := range f.tasks {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Load restores a checkpoint written by Save into f, whose embedder must
// have the checkpoint's network and whose options its buffer settings: the
// weights, the optimiser state, every task (replacing f's) and the meta
// update switch. It decodes the caller's state into user (a pointer; nil
// to ignore it). On error f is unchanged.
func (f *FLASH) Load(path string, user any) error {
	c, err := rl.ReadCheckpoint(path)
	if err != nil {
		return fmt.Errorf("meta: Load: %w", err)
	}
	var m flashMeta
	if user != nil {
		m.User = user
	}
	if err := c.Meta(&m); err != nil {
		return fmt.Errorf("meta: Load %s: %w", path, err)
	}
	if m.Version != checkpointVersion && m.Version != 1 {
		return fmt.Errorf("meta: Load %s: version %d, this build reads 1 and %d", path, m.Version, checkpointVersion)
	}
	if m.Network != f.emb.cfg {
		return fmt.Errorf("meta: Load %s: network %+v, the embedder is %+v", path, m.Network, f.emb.cfg)
	}
	if m.Selection != f.opts.Selection.String() || m.M != f.opts.M || m.Steps != f.opts.Steps || m.Capacity != f.opts.Capacity || m.TTL != f.opts.TTL {
		return fmt.Errorf("meta: Load %s: bundles of %d %s trajectories of %d steps from buffers of %d expiring after %d steps, FLASH has %d %s, %d, %d, %d",
			path, m.M, m.Selection, m.Steps, m.Capacity, m.TTL, f.opts.M, f.opts.Selection, f.opts.Steps, f.opts.Capacity, f.opts.TTL)
	}
	// Decode into copies first, so that a bad checkpoint changes nothing.
	params := f.emb.Params()
	vals := make([][]float64, len(params))
	opts := make([]*rl.Adam, len(params))
	var contrast []*rl.Adam
	for i, p := range params {
		name := fmt.Sprintf("embedder/%d", i)
		v, ok := c.Get(name)
		if !ok || len(v) != p.Len() {
			return fmt.Errorf("meta: Load %s: entry %q missing or not %d values", path, name, p.Len())
		}
		vals[i] = v
		opts[i] = rl.NewAdam(f.opts.LR)
		if err := c.LoadAdam(fmt.Sprintf("adam/%d", i), opts[i], p); err != nil {
			return fmt.Errorf("meta: Load %s: %w", path, err)
		}
		if _, ok := c.Get(fmt.Sprintf("contrast-adam/%d/t", i)); ok { // Contrast had run
			o := rl.NewAdam(DefaultContrast().LR) // Contrast sets its LR
			if err := c.LoadAdam(fmt.Sprintf("contrast-adam/%d", i), o, p); err != nil {
				return fmt.Errorf("meta: Load %s: %w", path, err)
			}
			contrast = append(contrast, o)
		}
	}
	if len(contrast) != 0 && len(contrast) != len(params) {
		return fmt.Errorf("meta: Load %s: the identification objective's optimiser state covers %d of %d parameter groups", path, len(contrast), len(params))
	}
	w := f.emb.cfg.Features
	tasks := map[string]*flashTask{}
	for _, st := range m.Tasks {
		t := st.Task
		if t.Name == "" || t.StateDim <= 0 || t.ActionDim <= 0 || t.StateDim+t.ActionDim+1 != w {
			return fmt.Errorf("meta: Load %s: task %q: state %d + action %d + reward 1 must be the embedder's %d features", path, t.Name, t.StateDim, t.ActionDim, w)
		}
		if _, dup := tasks[t.Name]; dup {
			return fmt.Errorf("meta: Load %s: task %q twice", path, t.Name)
		}
		buf, _ := NewBuffer(f.opts.Capacity, f.opts.TTL)
		buf.now = st.Now
		items := st.Items
		if m.Version >= 2 {
			heads, ok := c.Get("heads/" + t.Name)
			if !ok || len(heads) != headLen*st.Trajectories || len(st.Items) != 0 {
				return fmt.Errorf("meta: Load %s: task %q: the heads of its %d trajectories are missing or malformed", path, t.Name, st.Trajectories)
			}
			items = make([]trajectoryHead, st.Trajectories)
			for j := range items {
				h := heads[headLen*j : headLen*(j+1)]
				items[j] = trajectoryHead{Steps: int(h[0]), Reward: h[1], Episode: int(h[2]), End: int(h[3])}
			}
		}
		for j, h := range items {
			el, ok := c.Get(fmt.Sprintf("task/%s/%d", t.Name, j))
			if !ok || h.Steps <= 0 || len(el) != h.Steps*w {
				return fmt.Errorf("meta: Load %s: task %q trajectory %d: missing or not %d steps of %d features", path, t.Name, j, h.Steps, w)
			}
			buf.items = append(buf.items, buffered{Trajectory: Trajectory{Elements: slices.Clone(el), Steps: h.Steps, Reward: h.Reward, Episode: h.Episode}, end: h.End})
		}
		tasks[t.Name] = &flashTask{Task: t, buf: buf, episodes: st.Episodes, embedding: make([]float64, f.emb.cfg.Embed), stale: true}
	}
	for i, p := range params {
		copy(p.Values(), vals[i])
		f.opt[i] = opts[i]
	}
	f.contrastOpt = contrast
	f.tasks, f.current = tasks, ""
	f.emb.ZeroGrad()
	f.updates = m.Updates
	f.emb.SetTraining(m.Updates)
	return nil
}

// Package metalearn is the meta learner's training run and its held-out
// identification: `aware meta train` (Train: DDPG and the meta learner
// trained together over the pool's train-split applications, resumable,
// one line per round in rounds.jsonl, with an optional identification of
// held-out train-split applications after every round) and `aware meta
// eval` (Eval: what a trained embedding tells apart on the test split,
// and how its similarity relates to the reward lost with another
// application's embedding). The applications, their load and the
// simulator come from evaluation/study/lab; the loops from
// evaluation/train.
package metalearn

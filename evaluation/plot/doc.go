// Package plot draws the evaluation's figures with gonum/plot: learning
// curves of agents (per-episode reward with a moving average) against the
// reward of a baseline. The output format follows the file extension (.png,
// .svg or .pdf), and drawing is deterministic for the same input.
package plot

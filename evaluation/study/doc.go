// Package study is the machinery the scripted studies (adaptation,
// serving, bootstrapping, characterisation) share: a study is a Plan of
// Cells (one arm on one application with one seed, under one scenario),
// each run once and saved as it finishes in a Store, so that an
// interrupted study resumes where it stopped, a study split with Shard
// across machines is put back together with Merge, and the results do not
// depend on how many workers ran them. Stats summarises figures with
// percentile-bootstrap confidence intervals (means and ratios of means,
// the way the paper's ratios are computed), and Progress reports cells
// done and the time left.
package study

// Package transfer holds the transfer-learning baselines AWARE is compared
// with (paper §5.2). TL moves a policy trained on one application to
// another by copying its weights (agent Save and Load) and fine-tuning it
// there. TL+ does the same with a wider state: Plus wraps an environment
// and appends a one-step load forecast (a seasonal AR model, package
// forecast, standing in for the paper's ARIMA) and features of a Table
// that maps the allocations the application has run at to the performance
// measured there (the paper's "table mapping from resource allocation to
// performance"): the current allocation's cell and its six neighbours.
package transfer

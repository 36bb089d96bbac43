// Package prometheus runs a real Prometheus server (Debian's
// /usr/bin/prometheus) on the loopback interface for integration tests,
// benchmarks and local experiments: Start writes a prometheus.yml built from
// functional options (global scrape interval, static scrape targets, raw YAML
// scrape configs as an escape hatch) into a directory, keeps the TSDB in
// dir/data and the server's log in dir/prometheus.log, listens on a free
// 127.0.0.1 port with the lifecycle API enabled, supervises the process with
// infra/localproc and returns once /-/ready answers. Targets whose address is
// known only later are set with SetStaticTarget and applied with Reload;
// WaitForTarget blocks until every target of a scrape job is up, as reported
// by /api/v1/targets. Stop is idempotent. ErrNoBinary tells callers (and
// tests, which skip unless CI=true) that Prometheus is not installed.
package prometheus

package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/aware-autoscaler/aware/infra/cluster"
)

func newClusterCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cluster",
		Short: "Run a local Kubernetes control plane (etcd, apiserver, controller-manager, scheduler, kwok) without Docker",
	}
	var dir, cache string
	var nodes int
	up := &cobra.Command{
		Use:   "up",
		Short: "Build the pinned binaries if needed (about 10 minutes once), start the control plane and write a kubeconfig",
		Long: `Builds kube-apiserver, kube-controller-manager, kube-scheduler and kubectl (Kubernetes ` + cluster.DefaultVersions().Kubernetes + `),
etcd ` + cluster.DefaultVersions().Etcd + ` and kwok ` + cluster.DefaultVersions().Kwok + ` from the Go module proxy into --cache unless they are there,
then starts them on loopback with a locally generated PKI and RBAC, registers --nodes fake nodes
and writes <dir>/kubeconfig. The processes keep running after the command exits; "aware cluster
down" stops them. Running "up" again while the control plane runs does nothing.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if cache == "" {
				d, err := cluster.DefaultCacheDir()
				if err != nil {
					return err
				}
				cache = d
			}
			log := cmd.ErrOrStderr()
			bins, err := cluster.Install(cmd.Context(), cache, cluster.DefaultVersions(), log)
			if err != nil {
				return err
			}
			c, err := cluster.Up(cmd.Context(), cluster.Config{Dir: dir, Binaries: bins, Nodes: nodes, Detach: true, Log: log})
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "export KUBECONFIG=%s\n", c.Kubeconfig)
			return nil
		},
	}
	up.Flags().StringVar(&dir, "dir", "out/cluster", "state directory: PKI, etcd data, logs, kubeconfig")
	up.Flags().StringVar(&cache, "cache", "", "binary cache (default $XDG_CACHE_HOME/aware/cluster)")
	up.Flags().IntVar(&nodes, "nodes", 4, "fake nodes, 1100 pods each")
	down := &cobra.Command{
		Use:   "down",
		Short: "Stop the control plane started by \"aware cluster up\" (its state directory stays)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if _, err := os.Stat(dir); err != nil {
				return fmt.Errorf("--dir %s: %w", dir, err)
			}
			return cluster.Stop(cmd.Context(), dir)
		},
	}
	down.Flags().StringVar(&dir, "dir", "out/cluster", "state directory given to \"aware cluster up\"")
	install := &cobra.Command{
		Use:   "install",
		Short: "Build the pinned control-plane binaries into the cache if they are not there (ci/setup.sh runs it)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if cache == "" {
				d, err := cluster.DefaultCacheDir()
				if err != nil {
					return err
				}
				cache = d
			}
			_, err := cluster.Install(cmd.Context(), cache, cluster.DefaultVersions(), cmd.ErrOrStderr())
			return err
		},
	}
	install.Flags().StringVar(&cache, "cache", "", "binary cache (default $XDG_CACHE_HOME/aware/cluster)")
	cmd.AddCommand(up, down, install)
	return cmd
}

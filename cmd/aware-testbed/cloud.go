package main

import (
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/aware-autoscaler/aware/generator"
	"github.com/aware-autoscaler/aware/testbed"
	"github.com/aware-autoscaler/aware/testbed/image"
)

// newCostCmd prints what the gke target's cluster costs per hour.
func newCostCmd() *cobra.Command {
	var fl testbedFlags
	cmd := &cobra.Command{
		Use:   "cost",
		Short: "Print the gke target's node pool (sized from the apps) and its list price per hour",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg := fl.config()
			cfg.Target, cfg.Kubeconfig = testbed.TargetGKE, ""
			sets, err := objects(cfg)
			if err != nil {
				return err
			}
			cpu, mem, pods := testbed.Demand(sets)
			cost := testbed.GKECost(cfg.GKE, sets)
			acpu, amem := testbed.Allocatable(cost.Machine)
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 0, 2, ' ', 0)
			fmt.Fprintf(w, "apps\t%d\n", cfg.Apps)
			fmt.Fprintf(w, "pods at start\t%d (requests %.1f CPU, %.1f GiB)\n", pods, cpu, mem)
			fmt.Fprintf(w, "nodes\t%d × %s in %s (%.2f CPU, %.1f GiB allocatable each; twice the requests)\n",
				cost.Nodes, cost.Machine.Name, cfg.GKE.Location, acpu, amem)
			fmt.Fprintf(w, "nodes $/h\t%.2f (%.3f each)\n", cost.NodesPerHour, cost.Machine.USDPerHour)
			fmt.Fprintf(w, "disks $/h\t%.2f (%d GB pd-balanced each)\n", cost.DiskPerHour, cfg.GKE.DiskGB)
			fmt.Fprintf(w, "cluster fee $/h\t%.2f\n", cost.FeePerHour)
			fmt.Fprintf(w, "total $/h\t%.2f (%.0f per day)\n", cost.Total(), 24*cost.Total())
			return w.Flush()
		},
	}
	fl.register(cmd.Flags(), true)
	return cmd
}

// newImageCmd builds the project's image and writes or pushes it.
func newImageCmd() *cobra.Command {
	var repo, out, src, arch string
	var push bool
	cmd := &cobra.Command{
		Use:   "image",
		Short: "Build the aware image without a container engine; write it as a tarball (docker load) or push it (--push) and print its pinned reference",
		Long: `Builds ./cmd/aware static for Linux and assembles the image (the binary on an empty
base, non-root) with go-containerregistry. Without --push it is written to --out as a
docker-save tarball under repository:<digest prefix>; with --push it goes to the registry
(credentials from the docker config) and the printed reference is repository@sha256:…,
what --image of "up" takes.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			built, err := image.FromSource(ctx, src, out, repo, arch)
			if err != nil {
				return err
			}
			if push {
				if built, err = image.Push(ctx, built); err != nil {
					return err
				}
			} else {
				path, err := image.WriteTarballIn(out, built)
				if err != nil {
					return err
				}
				fmt.Fprintln(cmd.ErrOrStderr(), "wrote", path)
			}
			fmt.Fprintln(cmd.OutOrStdout(), built.Ref)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&repo, "repository", generator.ImageRepository, "image repository")
	f.StringVar(&out, "out", "out/testbed/image", "folder of the static binary and the tarball")
	f.StringVar(&src, "source", "", "the project's source (default: the module of the working directory)")
	f.StringVar(&arch, "arch", "", "target architecture, amd64 or arm64 (default: this machine's)")
	f.BoolVar(&push, "push", false, "push to the registry instead of writing a tarball")
	return cmd
}

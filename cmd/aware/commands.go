package main

import "github.com/spf13/cobra"

// subcommands lists the top-level subcommands; each lives in its own file.
func subcommands() []*cobra.Command {
	return []*cobra.Command{
		newRunCmd(),
		newWorkloadCmd(),
		newLoadgenCmd(),
		newTraceCmd(),
		newSimCmd(),
		newTrainCmd(),
		newMetaCmd(),
		newCompareCmd(),
		newBenchCmd(),
		newGenerateCmd(),
		newClusterCmd(),
		newTestbedCmd(),
		newEnvCmd(),
		newControllerCmd(),
		newAgentsCmd(),
		newTwinCmd(),
		newStudyCmd(),
		newFaultsCmd(),
	}
}

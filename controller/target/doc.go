// Package target reads what an MPA scales: its target's scale subresource
// (GetScale), the target's pods (Pods, through a cache index of pods by
// label, IndexPods), the container the MPA sizes (ScaledContainer) and that
// container's resources as specified, as applied or averaged over the pods
// (Resources). The controller, its MPA environment, the agent runner and
// the fault and scale experiments all find a target's pods this way, as
// upstream VPA keeps its target helpers in pkg/target. It does not decide
// anything: the decisions are controller/autoscaler's.
package target

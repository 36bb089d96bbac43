// Package mpa is the default recommender of a MultidimPodAutoscaler: the
// upstream HPA and VPA algorithms (packages hpa and vpa) combined without
// fighting over CPU. Running both on CPU makes a loop: the VPA resizes the
// CPU request, which moves the HPA's utilisation, which moves the replica
// count, which moves per-pod usage and so the VPA again. The combination
// resolves it as GKE's multidimensional pod autoscaling does (horizontal on
// CPU, vertical on memory), extended for the bounds: the HPA owns the replica
// count on CPU utilisation; the VPA owns the memory limit fully; the CPU limit
// per pod is left to the VPA only when horizontal scaling cannot act, that
// is when the workload runs MaxReplicas and the HPA is still over target
// (the VPA may only grow CPU per pod) or runs MinReplicas and is under target
// (it may only shrink it), outside the HPA's tolerance in both cases, and
// then only when the VPA's own update rule moves it (request outside the
// recommended bounds, 12 h old pods and a 10 % change, or a quick OOM);
// otherwise the CPU per pod stays. When the CPU per pod changes, the HPA's
// stabilisation history, computed against the old request, is reset as for
// a new HPA; its scale events, which rate-limit pods, are kept. The VPA sees
// every step, so its histograms are warm when it is given CPU.
package mpa

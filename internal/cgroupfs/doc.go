// Package cgroupfs writes pod-level cgroups on the cgroup file system, for
// the agent's QoS and pod cgroups (agent/podcgroup) and the pod cgroups
// the runtime makes itself (sandbox): it finds the hierarchies (v2, or
// every mounted v1 hierarchy), makes cgroup directories level by level
// (enabling the parent's controllers on v2, giving a new v1 cpuset its
// parent's cpus and mems), and writes Limits (cpu shares or weight, CFS
// quota, memory limit), or converts them to the properties of a systemd
// slice. Containers' own cgroups are the OCI runtime's.
//
// It writes plain files rather than going through containerd/cgroups: the
// knobs are few, and owning the writes lets tests point it at a plain
// directory.
package cgroupfs

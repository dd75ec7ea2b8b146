// Package podcgroup manages the pod-level cgroups of the agent, the way the
// kubelet's QoS and pod container managers do with --cgroups-per-qos: a
// root cgroup for pods (Config.Root, "kubepods"), a "burstable" and a
// "besteffort" QoS cgroup under it, and one cgroup per pod, named after the
// pod's UID, directly under the root for Guaranteed pods and under its QoS
// cgroup otherwise. The pod cgroup carries the pod's aggregate limits
// (PodLimits: cpu shares from requests, CFS quota and memory limit when
// every container declares one, as ResourceConfigForPod computes them) and
// is the CgroupParent podconfig gives the sandbox, so that the runtime puts
// every container of the pod beneath it. UpdateQOS gives the Burstable
// cgroup the shares of its pods' summed CPU requests, as the kubelet's QoS
// manager does; the root itself gets no node-allocatable limits.
//
// It owns those cgroups and nothing else: it never touches the
// containers' own cgroups except to kill stray processes in them and
// remove them when the pod's cgroup goes (RemovePod waits up to about five
// seconds for killed processes to leave).
//
// With the systemd driver the cgroups are systemd's, as with the
// kubelet's: it uses systemd's naming (kubepods.slice,
// kubepods-burstable.slice, kubepods-burstable-pod<uid>.slice, dashes of
// the UID turned into underscores) and makes each as a transient slice
// unit through systemd's D-Bus API (Config.Systemd, package systemd), with
// the limits as unit properties (CPUWeight from the shares,
// CPUQuotaPerSecUSec rounded up to systemd's whole percent, MemoryMax), so
// that systemd neither undoes them nor keeps a slice after its pod:
// RemovePod kills what is left in the pod's slice and then stops it. It
// writes no cgroup file then: it reads the cgroup directories to list pods
// and find processes, and removes only those systemd does not know (on v1,
// runc makes some in hierarchies systemd does not manage). Without a
// client (systemd not running) every method fails.
//
// Under cgroupfs, cgroups are handled with plain file operations rather
// than containerd/cgroups: the knobs written are few (cpu.shares,
// cpu.cfs_period_us, cpu.cfs_quota_us and memory.limit_in_bytes on v1;
// cpu.weight, cpu.max and memory.max on v2), and owning the file writes
// lets Config.FS point at a plain directory in tests. On cgroup v1 the
// directories are made in every mounted hierarchy (found as the
// directories under Config.FS that hold a cgroup.procs file), with
// cpuset.cpus and cpuset.mems copied from the parent so that tasks can
// join; on v2 (Config.FS holds cgroup.controllers) the parent's
// controllers are enabled in its cgroup.subtree_control before each level.
//
// Invariants: every method is idempotent; the path EnsurePod returns and
// Pods lists is the string podconfig.SandboxConfig puts in
// LinuxPodSandboxConfig.CgroupParent when Options.CgroupParent is
// Manager.CgroupParent(); New does no I/O; nothing here caches cgroup
// or unit state, so the Manager is safe for concurrent use on different
// pods.
package podcgroup

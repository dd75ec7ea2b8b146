// Package kernelstats reads resource usage of containers and pods from their
// cgroups (v1 hierarchies or the v2 unified hierarchy, through
// github.com/containerd/cgroups/v3), computes CPU rates from successive
// samples, measures a directory's disk usage (a container's writable
// layer) and reads a network namespace's interface counters from
// net/dev.
//
// It owns no cgroup: it never creates, changes or removes one, and it knows
// nothing of CRI types or of how crib names containers; callers hand it the
// OCI cgroups path they gave the runtime, and enter a pod's network
// namespace themselves before reading its interfaces.
//
// Invariants: a cgroup that does not exist (never made, or already removed)
// is reported with errdefs.ErrNotFound; all values are taken as the kernel
// reports them, with "unlimited" limits reported as zero.
package kernelstats

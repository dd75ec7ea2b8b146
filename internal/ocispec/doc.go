// Package ocispec builds the OCI runtime spec (runtime-spec specs-go) for one
// CRI container from its ContainerConfig, its pod's PodSandboxConfig, the
// image's config and what the sandbox already provides (namespace paths,
// hostname/resolv.conf/hosts files, /dev/shm, the cgroup path).
//
// It owns the translation only: it does not mount, create namespaces, exec or
// talk to the OCI runtime. The reads it does make are small and local: the
// container rootfs's /etc/passwd and /etc/group (always through securejoin, so
// symlinks in the image cannot escape the rootfs), stat(2) of CRI mount
// sources and device nodes, the host device directory for privileged
// containers, and Localhost seccomp profiles (ReadHostCaps, for the daemon's
// start-up, reads /proc).
//
// Invariants: Build never mutates its Input; its output is deterministic for a
// given Input and file system (every slice derived from a map is sorted), so
// specs can be compared with golden files; invalid requests fail with an
// error wrapping errdefs.ErrInvalidArgument (ErrNotImplemented for CRI
// features crib does not support, ErrFailedPrecondition for a capability the
// node cannot grant) that names the offending field.
//
// Choices worth knowing: image volumes (ImageConfig.Volumes) are ignored:
// the directory stays part of the container's own writable rootfs, holding
// the image's content, where containerd would bind an anonymous copy (the
// one difference: with a read-only rootfs it is read-only too); RuntimeDefault seccomp is a
// compact deny-list (default allow, EPERM for dangerous syscalls unless the
// container holds the capability that makes them legitimate) rather than
// Docker's large allow-list; AppArmor is not supported, so a Localhost
// AppArmor profile is rejected while RuntimeDefault and Unconfined are
// accepted as no-ops; SELinux options are ignored; no container gets a
// capability the daemon itself lacks (Input.HostCaps), so privileged means
// "everything crib holds"; hugepage limits are dropped unless the host has
// the hugetlb controller (Input.Hugetlb), as containerd does by default;
// masked and read-only paths are the CRI's lists alone (none when it sends
// none, as containerd: the kubelet sends its defaults itself).
//
// User namespaces: a container of a pod in its own user namespace joins
// the pod's pinned one (Namespaces.User) with the pod's id mappings, and
// its CRI bind mounts are id-mapped by the kubelet's mappings, else the
// pod's; its CRI image mounts (Input.ImageVolumes), which the caller
// mounted from id-mapped layers, and the sandbox's files, which are the
// pod's root's already, are bound unmapped. On the host network such a
// container gets the host's /sys bound read-only in place of a sysfs it
// could not mount.
package ocispec

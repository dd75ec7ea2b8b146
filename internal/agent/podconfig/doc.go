// Package podconfig turns a Pod, as the source package defaulted it, into the
// CRI configurations the agent hands to a runtime: the PodSandboxConfig for
// RunPodSandbox and one ContainerConfig per CreateContainer. It is the
// agent's rewrite of the kubelet's generatePodSandboxConfig and
// generateContainerConfig together with the environment, mount, DNS, QoS,
// resource and security-context rules they rely on.
//
// It owns only that translation. It does no I/O: it never reads the host's
// resolv.conf, never creates the termination-message file, the log
// directories or subPath directories, never looks up images, ConfigMaps or
// Secrets. Everything it needs from the outside world comes in through
// Options (node facts) and ContainerInput (pod IPs, the image's user, the
// host paths of prepared volumes and subPaths, the ConfigMaps and Secrets of
// the pod's namespace). The caller performs the effects the configs
// describe; SubPaths tells it which subPaths to prepare.
//
// Invariants: the same input always yields the same config (environment
// variables, mounts and port mappings come out in a fixed order, so a hash
// of a config is stable); every error is wrapped around an errdefs class
// (ErrInvalidArgument for a spec the node cannot honour, ErrNotFound for a
// missing volume, ConfigMap, Secret, key or runtime class) and names the
// field or object at fault, because the kubelet reports such errors as
// CreateContainerConfigError with the message shown to the user.
//
// Where the kubelet's behaviour depends on a cluster that a standalone agent
// does not have, the choice made here is written next to the code: no
// cluster DNS unless Options.ClusterDNS names one, no service environment
// variables, downward-API limits defaulted to the node's capacity only when
// Options gives it.
//
// Other agent packages share its pod rules rather than keeping copies:
// podstatus and podcgroup take the pod's class from QOSClass, podcgroup
// sizes the pod cgroup from PodResources and converts CPU with
// MilliCPUToShares and MilliCPUToQuota, as the CRI resources here are, and
// volume renders downwardAPI files with MetadataField, as environment
// variables here do.
package podconfig

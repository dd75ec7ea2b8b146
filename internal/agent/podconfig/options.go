package podconfig

import (
	"github.com/crib-dev/crib/internal/agent/labels"
	"github.com/crib-dev/crib/internal/agent/userns"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Options are the node facts the configs depend on. The zero value is
// usable: logs go nowhere sensible (set PodLogRoot), the runtime picks the
// pod cgroup, pods resolve names with the host's resolv.conf.
type Options struct {
	// PodLogRoot is the directory pod log directories go under, normally
	// "/var/log/pods".
	PodLogRoot string
	// Owner is the value of the labels.ManagedBy label on everything the
	// agent creates, which is how agents sharing a runtime tell their pods
	// apart (`crib agent` and a `crib run` beside it). Empty means
	// labels.ManagedByValue, the one agent of the node.
	Owner string
	// CgroupParent is where the per-QoS pod cgroups go, as the kubelet lays
	// them out: <CgroupParent>/pod<uid> for Guaranteed pods and
	// <CgroupParent>/{burstable,besteffort}/pod<uid> for the others
	// (cgroupfs; use an absolute path such as "/kubepods"). A value ending in
	// ".slice" selects systemd naming (kubepods-burstable-pod<uid>.slice).
	// Empty leaves the choice to the runtime, which then owns the cgroup.
	// When set, creating and removing the pod cgroup is the caller's job,
	// as it is the kubelet's.
	CgroupParent string
	// ClusterDomain is the DNS domain of the (absent) cluster, e.g.
	// "cluster.local". It is used for ClusterFirst search paths when
	// ClusterDNS is set and for the pod's FQDN with a subdomain.
	ClusterDomain string
	// ClusterDNS are nameservers that play the cluster DNS. Empty (the
	// standalone case) makes ClusterFirst pods fall back to the host's
	// resolver, as the kubelet does without --cluster-dns.
	ClusterDNS []string
	// HostDNS is the host's resolv.conf, parsed with ParseResolvConf. It is
	// only needed to merge a pod's dnsConfig into the host's settings; when
	// nil and the pod asks for nothing special, the sandbox gets no DNS
	// config and the runtime copies the host's resolv.conf itself.
	HostDNS *runtimeapi.DNSConfig
	// RuntimeHandlers maps a RuntimeClassName to a CRI runtime handler; ""
	// is the runtime's default handler.
	RuntimeHandlers map[string]string
	// NodeName fills spec.nodeName in the downward API when the pod does
	// not carry one.
	NodeName string
	// HostIPs are the node's addresses, primary first: status.hostIP(s) in
	// the downward API, and status.podIP(s) of host-network pods when the
	// caller passes no pod IP.
	HostIPs []string
	// NodeMemoryBytes is the node's memory capacity. It scales the OOM score
	// of Burstable containers and stands in for an unset memory limit in
	// the downward API. Zero means unknown (see oomScoreAdj).
	NodeMemoryBytes int64
	// NodeMilliCPU is the node's CPU capacity in millicores; it stands in
	// for an unset CPU limit in the downward API. Zero means unknown.
	NodeMilliCPU int64
	// SeccompProfileRoot is the directory Localhost seccomp profiles are
	// relative to (the kubelet's <root-dir>/seccomp).
	SeccompProfileRoot string
	// SeccompDefault makes RuntimeDefault the profile of containers that
	// name none (the kubelet's --seccomp-default); off means Unconfined.
	SeccompDefault bool
}

// ImageUser is the user an image runs as, as the runtime's ImageStatus
// reports it: UID when the image's user is numeric, Username when it is a
// name. Both empty means the image sets no user, i.e. root.
type ImageUser struct {
	UID      *int64
	Username string
}

// ContainerInput is everything ContainerConfig needs about one container
// instance besides Options.
type ContainerInput struct {
	Pod       *corev1.Pod
	Container *corev1.Container
	// Type is labels.TypeInit, labels.TypeApp or labels.TypeEphemeral.
	Type string
	// RestartCount is the attempt number of this container instance.
	RestartCount uint32
	// Hash is stored in the labels.ContainerHash annotation, ResizeHash
	// (when set) in labels.ContainerResizeHash.
	Hash       string
	ResizeHash string
	// PodIP and PodIPs are the sandbox's addresses, primary first.
	PodIP  string
	PodIPs []string
	// Image is the image reference or id to create the container from
	// (the resolved image id).
	Image string
	// ImageUser is the image's user from ImageStatus; nil when unknown.
	ImageUser *ImageUser
	// Volumes maps a pod volume name to the host path the volume package
	// prepared for it.
	Volumes map[string]string
	// SubPaths maps the index of a volumeMount in Container.VolumeMounts
	// that has a subPath or subPathExpr to the host path the volume package
	// prepared for it (volume.Manager.PrepareSubPath, fed with what
	// SubPaths returns). Every such volumeMount must have one: its host
	// path is never joined from the volume's path here, since a symlink a
	// container planted in the volume would lead the runtime anywhere.
	SubPaths map[int]string
	// ImageVolumes maps the name of each image volume of the pod to the
	// image the runtime mounts for it (the id the agent pulled or found).
	// Its volumeMounts become CRI mounts of the image, their subPath the
	// mount's image_sub_path, which the runtime resolves inside the image.
	ImageVolumes map[string]string
	// ConfigMaps and Secrets are the objects the pod may refer to, keyed
	// "namespace/name".
	ConfigMaps map[string]*corev1.ConfigMap
	Secrets    map[string]*corev1.Secret
	// UserNamespace is the pod's block of host ids when it has hostUsers:
	// false, the same the sandbox was made with; nil for any other pod.
	UserNamespace *userns.Range
	// TerminationMessageHostPath is the host file (already created by the
	// caller, mode 0666) mounted at the container's terminationMessagePath.
	// Empty mounts nothing.
	TerminationMessageHostPath string
}

// OwnerLabel is the value of the labels.ManagedBy label for these options.
func (o Options) OwnerLabel() string {
	if o.Owner == "" {
		return labels.ManagedByValue
	}
	return o.Owner
}

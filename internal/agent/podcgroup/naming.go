package podcgroup

import (
	"fmt"
	"path"
	"strings"

	"github.com/containerd/errdefs"
	corev1 "k8s.io/api/core/v1"

	"github.com/crib-dev/crib/internal/kernelstats"
)

// The QoS classes that get a cgroup of their own, and the prefix of a pod
// cgroup's name.
const (
	burstable  = "burstable"
	besteffort = "besteffort"
	podPrefix  = "pod"
	sliceExt   = ".slice"
)

// classes are the QoS classes in the order they are searched.
var classes = []corev1.PodQOSClass{corev1.PodQOSGuaranteed, corev1.PodQOSBurstable, corev1.PodQOSBestEffort}

// naming turns QoS classes and pod UIDs into cgroup names, in the form the
// runtime is given (a cgroupfs path, or a systemd slice name), and those
// names into paths below a hierarchy's root.
type naming struct {
	systemd bool
	// root is the cgroupfs path of the pods' root ("/kubepods"), or the
	// systemd slice name without ".slice" ("kubepods").
	root string
}

// newNaming validates the configured root for the driver.
func newNaming(root, driver string) (naming, error) {
	switch driver {
	case "", "cgroupfs":
		p := path.Clean("/" + root)
		if p == "/" {
			return naming{}, fmt.Errorf("cgroup root %q: empty: %w", root, errdefs.ErrInvalidArgument)
		}
		return naming{root: p}, nil
	case "systemd":
		base := strings.TrimSuffix(root, sliceExt)
		if _, err := kernelstats.ExpandSlice(base + sliceExt); err != nil || base == "-" {
			return naming{}, fmt.Errorf("cgroup root %q: not a systemd slice: %w", root, errdefs.ErrInvalidArgument)
		}
		return naming{systemd: true, root: base}, nil
	}
	return naming{}, fmt.Errorf("cgroup driver %q: not cgroupfs or systemd: %w", driver, errdefs.ErrInvalidArgument)
}

// parent is the pods' root as podconfig.Options.CgroupParent wants it.
func (n naming) parent() string {
	if n.systemd {
		return n.root + sliceExt
	}
	return n.root
}

// tier is the QoS cgroup's own name part; "" for Guaranteed, whose pods
// sit directly under the root.
func tier(qos corev1.PodQOSClass) string {
	switch qos {
	case corev1.PodQOSBurstable:
		return burstable
	case corev1.PodQOSBestEffort:
		return besteffort
	}
	return ""
}

// qosName is the name of the QoS class's cgroup (the root for Guaranteed).
func (n naming) qosName(qos corev1.PodQOSClass) string {
	t := tier(qos)
	switch {
	case t == "":
		return n.parent()
	case n.systemd:
		return n.root + "-" + t + sliceExt
	}
	return path.Join(n.root, t)
}

// podName is the pod cgroup's name, as podconfig gives it to the sandbox.
func (n naming) podName(qos corev1.PodQOSClass, uid string) string {
	if n.systemd {
		return n.podSlicePrefix(qos) + strings.ReplaceAll(uid, "-", "_") + sliceExt
	}
	return path.Join(n.qosName(qos), podPrefix+uid)
}

// podSlicePrefix is what every pod slice of the class starts with.
func (n naming) podSlicePrefix(qos corev1.PodQOSClass) string {
	name := n.root
	if t := tier(qos); t != "" {
		name += "-" + t
	}
	return name + "-" + podPrefix
}

// dir is the path of a named cgroup below a hierarchy's root, always
// absolute ("/kubepods.slice/kubepods-burstable.slice").
func (n naming) dir(name string) (string, error) {
	if n.systemd {
		return kernelstats.ExpandSlice(name)
	}
	return path.Clean("/" + name), nil
}

// levels are the directories from the root down to the named cgroup, the
// root first, as paths below a hierarchy's root.
func (n naming) levels(name string) ([]string, error) {
	d, err := n.dir(name)
	if err != nil {
		return nil, err
	}
	var out []string
	for p := d; p != "/"; p = path.Dir(p) {
		out = append([]string{p}, out...)
	}
	return out, nil
}

// uidOf recognises a directory in the class's cgroup as a pod cgroup and
// returns the pod's UID.
func (n naming) uidOf(qos corev1.PodQOSClass, entry string) (string, bool) {
	if n.systemd {
		rest, ok := strings.CutPrefix(entry, n.podSlicePrefix(qos))
		if !ok {
			return "", false
		}
		rest, ok = strings.CutSuffix(rest, sliceExt)
		if !ok || rest == "" {
			return "", false
		}
		return strings.ReplaceAll(rest, "_", "-"), true
	}
	uid, ok := strings.CutPrefix(entry, podPrefix)
	return uid, ok && uid != ""
}

// checkUID rejects a UID that cannot name a cgroup directory.
func checkUID(uid string) error {
	if uid == "" || uid == "." || uid == ".." || strings.ContainsAny(uid, "/\x00") {
		return fmt.Errorf("pod uid %q: %w", uid, errdefs.ErrInvalidArgument)
	}
	return nil
}

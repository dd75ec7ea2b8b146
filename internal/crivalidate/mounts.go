package crivalidate

import (
	"fmt"
	"slices"
	"strings"
)

// mountOptions are the options a CRI mount may add (KEP-5855): the three
// the API server lets a pod's volumeMounts[].bindMountOptions name and that
// RuntimeFeatures.mount_options promises. Each only takes a right away from
// the container, on every runtime and in a user namespace too. Everything
// else a mount can say has a field of its own (readonly,
// recursive_read_only, propagation) or would undo a restriction (exec,
// suid, dev, rw) or could fail at start on a source whose flags a user
// namespace locks (the atime options), so it is refused.
var mountOptions = []string{"noexec", "nodev", "nosuid"}

// MountOptions checks a CRI mount's mount_options: each one of noexec,
// nodev and nosuid, none twice.
func MountOptions(field string, opts []string) error {
	for j, o := range opts {
		if !slices.Contains(mountOptions, o) {
			if len(o) > 64 {
				o = o[:64] + "..."
			}
			return Invalid(fmt.Sprintf("%s[%d]", field, j), "%q is not supported (crib supports %s)", o, strings.Join(mountOptions, ", "))
		}
		if k := slices.Index(opts[:j], o); k >= 0 {
			return Invalid(fmt.Sprintf("%s[%d]", field, j), "%q repeats %s[%d]", o, field, k)
		}
	}
	return nil
}

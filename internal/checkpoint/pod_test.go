package checkpoint

import (
	"testing"

	"github.com/containerd/errdefs"
)

// A container's name names its archive in a pod checkpoint: one that
// would put the file outside the checkpoint's directory is refused.
func TestPodArchiveName(t *testing.T) {
	for _, name := range []string{"app", "app.v2", "a..b", "-x"} {
		if err := podArchiveName(name); err != nil {
			t.Errorf("podArchiveName(%q): %v, want nil", name, err)
		}
	}
	for _, name := range []string{"", ".", "..", "../../etc/x", "a/b", "/abs"} {
		if err := podArchiveName(name); !errdefs.IsInvalidArgument(err) {
			t.Errorf("podArchiveName(%q): %v, want invalid argument", name, err)
		}
	}
}

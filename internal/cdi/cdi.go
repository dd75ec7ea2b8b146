// Package cdi resolves Container Device Interface devices: the qualified
// names a container asks for ("vendor.com/class=name"), looked up in the
// CDI spec files of the configured directories, and the edits their specs
// make to the container's OCI spec (device nodes, mounts, env, hooks).
//
// The directories are re-read at each Resolve rather than watched: a
// device plugin writes its spec just before the kubelet asks for the
// device, and a watch would leave a window in which that device is still
// unknown; a watch is also a goroutine the library gives no way to stop.
// Only containers that ask for a device pay for the read.
package cdi

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/containerd/errdefs"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	cdilib "tags.cncf.io/container-device-interface/pkg/cdi"
	"tags.cncf.io/container-device-interface/pkg/parser"
)

// AnnotationPrefix starts the annotations that ask for CDI devices; their
// values are comma-separated qualified names.
const AnnotationPrefix = cdilib.AnnotationPrefix

// Registry resolves device names against the spec files of its
// directories. It is safe for concurrent use.
type Registry struct {
	dirs []string

	// mu serialises reads of the directories and edits: the library fills
	// a device node's missing fields in the cached spec while editing.
	mu    sync.Mutex
	cache *cdilib.Cache // made at the first Resolve
}

// New returns a registry over dirs, later directories taking precedence
// for a device defined in more than one. It does no I/O; with no
// directories every device is unknown.
func New(dirs []string) *Registry {
	return &Registry{dirs: slices.Clone(dirs)}
}

// CheckName reports whether name is a qualified CDI device name.
func CheckName(name string) error {
	if _, _, _, err := parser.ParseQualifiedName(name); err != nil {
		return fmt.Errorf("%q is not a qualified CDI device name (vendor.com/class=name): %w", name, errdefs.ErrInvalidArgument)
	}
	return nil
}

// Annotated returns the devices asked for by cdi.k8s.io/ annotations, in
// the order of their keys; a name that is not qualified is an
// InvalidArgument naming its annotation.
func Annotated(annotations map[string]string) ([]string, error) {
	var keys []string
	for k := range annotations {
		if strings.HasPrefix(k, AnnotationPrefix) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	var names []string
	for _, k := range keys {
		for name := range strings.SplitSeq(annotations[k], ",") {
			name = strings.TrimSpace(name)
			if err := CheckName(name); err != nil {
				return nil, fmt.Errorf("annotation %s: %w", k, err)
			}
			names = append(names, name)
		}
	}
	return names, nil
}

// Devices are resolved devices, ready to edit a spec.
type Devices struct {
	r    *Registry
	list []*cdilib.Device
}

// Resolve re-reads the spec directories and looks each name up. An
// unknown device, or one whose edits cannot be made (a host device node
// that is missing), is an InvalidArgument naming it. Nothing is edited
// until Apply; no names give nil Devices, which edit nothing. A nil
// Registry has no directories.
func (r *Registry) Resolve(names []string) (*Devices, error) {
	if len(names) == 0 {
		return nil, nil
	}
	if r == nil || len(r.dirs) == 0 {
		return nil, fmt.Errorf("unknown CDI device %q: no CDI spec directories are configured: %w", names[0], errdefs.ErrInvalidArgument)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cache == nil {
		// Without auto-refresh the cache starts no watch; it reads the
		// directories only when asked to (below).
		r.cache, _ = cdilib.NewCache(cdilib.WithSpecDirs(r.dirs...), cdilib.WithAutoRefresh(false))
	}
	// Spec files that do not parse are reported with an unknown device:
	// they may be why it is unknown. The other files' devices still work.
	specErrs := r.cache.Refresh()
	ds := &Devices{r: r}
	for _, name := range names {
		d := r.cache.GetDevice(name)
		if d == nil {
			err := fmt.Errorf("unknown CDI device %q: no spec in %s defines it", name, strings.Join(r.dirs, ", "))
			if specErrs != nil {
				err = fmt.Errorf("%w (spec errors: %v)", err, specErrs)
			}
			return nil, fmt.Errorf("%w: %w", err, errdefs.ErrInvalidArgument)
		}
		ds.list = append(ds.list, d)
	}
	// A trial on an empty spec finds what cannot be edited before the
	// caller makes anything.
	if err := ds.apply(&specs.Spec{Process: &specs.Process{}, Linux: &specs.Linux{}}); err != nil {
		return nil, err
	}
	return ds, nil
}

// Names are the resolved devices' qualified names.
func (ds *Devices) Names() []string {
	if ds == nil {
		return nil
	}
	names := make([]string, len(ds.list))
	for i, d := range ds.list {
		names[i] = d.GetQualifiedName()
	}
	return names
}

// Apply edits spec in place: each device's spec-wide edits once, then the
// device's own. It is the last edit of a spec, since device nodes take
// the process's uid and gid.
func (ds *Devices) Apply(spec *specs.Spec) error {
	if ds == nil {
		return nil
	}
	ds.r.mu.Lock()
	defer ds.r.mu.Unlock()
	return ds.apply(spec)
}

func (ds *Devices) apply(spec *specs.Spec) error {
	seen := map[*cdilib.Spec]bool{}
	for _, d := range ds.list {
		if s := d.GetSpec(); !seen[s] {
			seen[s] = true
			if err := s.ApplyEdits(spec); err != nil {
				return unresolvable(d, fmt.Errorf("edits of %s: %w", s.GetPath(), err))
			}
		}
		if err := d.ApplyEdits(spec); err != nil {
			return unresolvable(d, err)
		}
	}
	return nil
}

func unresolvable(d *cdilib.Device, err error) error {
	return fmt.Errorf("CDI device %q cannot be injected: %w: %w", d.GetQualifiedName(), err, errdefs.ErrInvalidArgument)
}

package volume

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"

	"github.com/containerd/errdefs"
	corev1 "k8s.io/api/core/v1"

	"github.com/crib-dev/crib/internal/mount"
)

// Plugin directory names under <Root>/<uid>/volumes, as the kubelet names them.
const (
	pluginEmptyDir    = "kubernetes.io~empty-dir"
	pluginConfigMap   = "kubernetes.io~configmap"
	pluginSecret      = "kubernetes.io~secret"
	pluginDownwardAPI = "kubernetes.io~downward-api"
	pluginProjected   = "kubernetes.io~projected"
)

// Config configures a Manager.
type Config struct {
	// Root holds one directory per pod, named by the pod's UID; a pod's
	// volumes live in <Root>/<uid>/volumes/<plugin>/<name>. Required; it is
	// created on the first Prepare. A symlink in Root is resolved so that
	// mount points match /proc/self/mountinfo.
	Root string
}

// Manager prepares and removes pods' volumes. It keeps no state of its own,
// so its methods may be called concurrently for different pods; calls for
// one pod must be serialised by the caller (the agent's pod worker does).
type Manager struct {
	root string
	log  *slog.Logger
}

// New returns a Manager. It does no I/O. A nil log discards.
func New(cfg Config, log *slog.Logger) *Manager {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Manager{root: cfg.Root, log: log}
}

// Prepare makes every volume of pod exist on the host and returns, for each
// volume name, the host path the runtime should bind-mount ("" for an image
// volume, which the runtime mounts). configMaps and
// secrets are keyed by "namespace/name". It is called on every sync and is
// idempotent; it refreshes configMap, secret and downwardAPI content when the
// data changed. On error no map is returned; the error names every volume
// that failed.
func (m *Manager) Prepare(ctx context.Context, pod *corev1.Pod, configMaps map[string]*corev1.ConfigMap, secrets map[string]*corev1.Secret) (map[string]string, error) {
	if pod == nil {
		return nil, fmt.Errorf("prepare volumes: no pod: %w", errdefs.ErrInvalidArgument)
	}
	uid := string(pod.UID)
	if err := checkName("pod uid", uid); err != nil {
		return nil, fmt.Errorf("prepare volumes of pod %s: %w", pod.Name, err)
	}
	podDir, err := m.podDir(uid, true)
	if err != nil {
		return nil, err
	}
	p := preparer{
		m:          m,
		pod:        pod,
		podDir:     podDir,
		configMaps: configMaps,
		secrets:    secrets,
	}
	paths := make(map[string]string, len(pod.Spec.Volumes))
	var errs []error
	for i := range pod.Spec.Volumes {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("prepare volumes of pod %s: %w", uid, err)
		}
		v := &pod.Spec.Volumes[i]
		if _, dup := paths[v.Name]; dup {
			errs = append(errs, fmt.Errorf("volume %q: declared twice: %w", v.Name, errdefs.ErrInvalidArgument))
			continue
		}
		path, err := p.prepare(v)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		paths[v.Name] = path
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("prepare volumes of pod %s/%s: %w", pod.Namespace, pod.Name, errors.Join(errs...))
	}
	return paths, nil
}

// preparer carries one Prepare call's inputs.
type preparer struct {
	m          *Manager
	pod        *corev1.Pod
	podDir     string
	configMaps map[string]*corev1.ConfigMap
	secrets    map[string]*corev1.Secret
}

func (p *preparer) volumeDir(plugin, name string) string {
	return filepath.Join(p.podDir, "volumes", plugin, name)
}

// prepare dispatches one volume to its kind.
func (p *preparer) prepare(v *corev1.Volume) (string, error) {
	if err := checkName("volume name", v.Name); err != nil {
		return "", fmt.Errorf("volume %q: %w", v.Name, err)
	}
	s := &v.VolumeSource
	switch {
	case s.HostPath != nil:
		return prepareHostPath(v.Name, s.HostPath)
	case s.EmptyDir != nil:
		return p.prepareEmptyDir(v.Name, s.EmptyDir)
	case s.ConfigMap != nil:
		return p.prepareConfigMap(v.Name, s.ConfigMap)
	case s.Secret != nil:
		return p.prepareSecret(v.Name, s.Secret)
	case s.DownwardAPI != nil:
		return p.prepareDownwardAPI(v.Name, s.DownwardAPI)
	case s.Projected != nil:
		return p.prepareProjected(v.Name, s.Projected)
	case s.Image != nil:
		// The runtime mounts the image itself (a CRI mount with an image):
		// nothing is made on the host, and there is no host path.
		return "", nil
	}
	kind := sourceKind(s)
	if kind == "" {
		// The API server defaults a volume without a source to an emptyDir.
		return p.prepareEmptyDir(v.Name, &corev1.EmptyDirVolumeSource{})
	}
	return "", fmt.Errorf("volume %q: %s volumes are not supported by crib's standalone agent: %w", v.Name, kind, errdefs.ErrInvalidArgument)
}

// sourceKind names the volume source that is set, by its JSON field name,
// or "" if none is.
func sourceKind(s *corev1.VolumeSource) string {
	rv := reflect.ValueOf(s).Elem()
	rt := rv.Type()
	for i := 0; i < rt.NumField(); i++ {
		f := rv.Field(i)
		if f.Kind() != reflect.Pointer || f.IsNil() {
			continue
		}
		name, _, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ",")
		if name == "" {
			name = rt.Field(i).Name
		}
		return name
	}
	return ""
}

// checkName refuses a name that cannot be one path element.
func checkName(what, name string) error {
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, "/\x00") {
		return fmt.Errorf("invalid %s %q: %w", what, name, errdefs.ErrInvalidArgument)
	}
	return nil
}

// realRoot returns Root with symlinks resolved, creating it when create is
// set. ok is false when Root does not exist and create is not set.
func (m *Manager) realRoot(create bool) (root string, ok bool, err error) {
	if m.root == "" {
		return "", false, fmt.Errorf("volume root not configured: %w", errdefs.ErrInvalidArgument)
	}
	if create {
		if err := os.MkdirAll(m.root, 0o750); err != nil {
			return "", false, fmt.Errorf("create volume root: %w", err)
		}
	}
	root, err = filepath.EvalSymlinks(m.root)
	if errors.Is(err, fs.ErrNotExist) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("resolve volume root: %w", err)
	}
	root, err = filepath.Abs(root)
	if err != nil {
		return "", false, fmt.Errorf("resolve volume root: %w", err)
	}
	return root, true, nil
}

// podDir returns <Root>/<uid> with Root resolved, creating it if asked.
func (m *Manager) podDir(uid string, create bool) (string, error) {
	root, ok, err := m.realRoot(create)
	if err != nil {
		return "", err
	}
	if !ok {
		return "", nil
	}
	dir := filepath.Join(root, uid)
	if create {
		if err := os.MkdirAll(filepath.Join(dir, "volumes"), 0o750); err != nil {
			return "", fmt.Errorf("create pod directory %s: %w", uid, err)
		}
	}
	return dir, nil
}

// Remove unmounts everything mounted under <Root>/<uid> and deletes the
// directory. A pod that has no directory is fine, so is a second call, so is
// a directory left half-made by a crash. Nothing is deleted while a mount
// remains, and no symlink is followed while deleting.
func (m *Manager) Remove(ctx context.Context, uid string) error {
	if err := checkName("pod uid", uid); err != nil {
		return fmt.Errorf("remove volumes: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("remove volumes of pod %s: %w", uid, err)
	}
	dir, err := m.podDir(uid, false)
	if err != nil {
		return fmt.Errorf("remove volumes of pod %s: %w", uid, err)
	}
	if dir == "" {
		return nil
	}
	if fi, err := os.Lstat(dir); errors.Is(err, fs.ErrNotExist) {
		return nil
	} else if err != nil {
		return fmt.Errorf("remove volumes of pod %s: %w", uid, err)
	} else if !fi.IsDir() {
		// Not ours to follow; unlink whatever it is.
		if err := os.Remove(dir); err != nil {
			return fmt.Errorf("remove volumes of pod %s: %w", uid, err)
		}
		return nil
	}
	if err := mount.UnmountUnder(dir); err != nil {
		return fmt.Errorf("remove volumes of pod %s: %w", uid, err)
	}
	left, err := mount.Under(dir)
	if err != nil {
		return fmt.Errorf("remove volumes of pod %s: %w", uid, err)
	}
	if len(left) > 0 {
		return fmt.Errorf("remove volumes of pod %s: %s still mounted: %w", uid, left[0], errdefs.ErrFailedPrecondition)
	}
	// os.RemoveAll unlinks symlinks and never descends through them.
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("remove volumes of pod %s: %w", uid, err)
	}
	m.log.Debug("pod volumes removed", "pod", uid)
	return nil
}

// Pods lists the UIDs that have a directory under Root, so that the agent's
// housekeeping can Remove those of pods that no longer exist. A missing Root
// lists nothing.
func (m *Manager) Pods() ([]string, error) {
	root, ok, err := m.realRoot(false)
	if err != nil || !ok {
		return nil, err
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		return nil, fmt.Errorf("list pod volume directories: %w", err)
	}
	var uids []string
	for _, e := range entries {
		if e.IsDir() {
			uids = append(uids, e.Name())
		}
	}
	return uids, nil
}

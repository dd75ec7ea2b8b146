package volume

import (
	"errors"
	"fmt"
	"os"
	"syscall"

	"github.com/containerd/errdefs"
	corev1 "k8s.io/api/core/v1"
)

// defaultFileMode is the mode of projected files when the volume gives none
// (the API's ConfigMapVolumeSourceDefaultMode and friends).
const defaultFileMode = 0o644

// Secret volumes live on a tmpfs of at least minSecretTmpfs bytes, or four
// times the pages their data needs (two versions coexist during an update,
// and the data may grow), rounded up to MiB. A tmpfs size is a cap, not a
// reservation: only what is written uses memory.
const (
	minSecretTmpfs = 16 << 20
	pageSize       = 4096
)

// keyed describes one configMap or secret source, in volume or projection
// form.
type keyed struct {
	kind        string // "configMap" or "secret"
	ref         string // namespace/name
	items       []corev1.KeyToPath
	defaultMode *int32
	defaultUser *int64
	optional    bool
}

// files turns the object's data (nil when the object is missing) into
// files, the kubelet's way: every key under its own name when items is
// empty, else each item's key under its path; a key an item names but the
// object lacks is an error unless the source is optional.
func (k keyed) files(data map[string][]byte, found bool) (payload, error) {
	files := payload{}
	if !found {
		if k.optional {
			return files, nil
		}
		return nil, fmt.Errorf("%s %s not found: %w", k.kind, k.ref, errdefs.ErrNotFound)
	}
	mode, err := fileMode(k.defaultMode, nil)
	if err != nil {
		return nil, err
	}
	uid := owner(k.defaultUser, nil)
	if len(k.items) == 0 {
		for key, b := range data {
			files[key] = file{data: b, mode: mode, uid: uid}
		}
		return files, checkPaths(files)
	}
	for _, it := range k.items {
		b, ok := data[it.Key]
		if !ok {
			if k.optional {
				continue
			}
			return nil, fmt.Errorf("%s %s has no key %q: %w", k.kind, k.ref, it.Key, errdefs.ErrNotFound)
		}
		m, err := fileMode(k.defaultMode, it.Mode)
		if err != nil {
			return nil, err
		}
		files[it.Path] = file{data: b, mode: m, uid: owner(k.defaultUser, it.User)}
	}
	return files, checkPaths(files)
}

// fileMode picks the item's mode, else the default, else 0644.
func fileMode(def, item *int32) (os.FileMode, error) {
	m := int32(defaultFileMode)
	switch {
	case item != nil:
		m = *item
	case def != nil:
		m = *def
	}
	if m < 0 || m > 0o777 {
		return 0, fmt.Errorf("file mode %#o is outside 0-0777: %w", m, errdefs.ErrInvalidArgument)
	}
	return os.FileMode(m), nil
}

// owner picks the item's user, else the default, else -1 (leave as is).
func owner(def, item *int64) int {
	switch {
	case item != nil:
		return int(*item)
	case def != nil:
		return int(*def)
	}
	return -1
}

func (p *preparer) objectRef(name string) string {
	ns := p.pod.Namespace
	if ns == "" {
		ns = "default"
	}
	return ns + "/" + name
}

// configMapData returns a ConfigMap's Data and BinaryData as bytes.
func (p *preparer) configMapData(ref string) (map[string][]byte, bool) {
	cm, ok := p.configMaps[ref]
	if !ok || cm == nil {
		return nil, false
	}
	data := make(map[string][]byte, len(cm.Data)+len(cm.BinaryData))
	for k, v := range cm.Data {
		data[k] = []byte(v)
	}
	for k, v := range cm.BinaryData {
		data[k] = v
	}
	return data, true
}

// secretData returns a Secret's Data with StringData merged over it, as the
// API server would have done.
func (p *preparer) secretData(ref string) (map[string][]byte, bool) {
	s, ok := p.secrets[ref]
	if !ok || s == nil {
		return nil, false
	}
	data := make(map[string][]byte, len(s.Data)+len(s.StringData))
	for k, v := range s.Data {
		data[k] = v
	}
	for k, v := range s.StringData {
		data[k] = []byte(v)
	}
	return data, true
}

func (p *preparer) configMapFiles(src keyed, name string) (payload, error) {
	if name == "" {
		return nil, fmt.Errorf("configMap without a name: %w", errdefs.ErrInvalidArgument)
	}
	src.kind, src.ref = "configMap", p.objectRef(name)
	data, found := p.configMapData(src.ref)
	return src.files(data, found)
}

func (p *preparer) secretFiles(src keyed, name string) (payload, error) {
	if name == "" {
		return nil, fmt.Errorf("secret without a name: %w", errdefs.ErrInvalidArgument)
	}
	src.kind, src.ref = "secret", p.objectRef(name)
	data, found := p.secretData(src.ref)
	return src.files(data, found)
}

func (p *preparer) prepareConfigMap(name string, src *corev1.ConfigMapVolumeSource) (string, error) {
	files, err := p.configMapFiles(keyed{
		items:       src.Items,
		defaultMode: src.DefaultMode,
		defaultUser: src.DefaultUser,
		optional:    src.Optional != nil && *src.Optional,
	}, src.Name)
	if err != nil {
		return "", fmt.Errorf("volume %q: %w", name, err)
	}
	return p.writeDisk(pluginConfigMap, name, files)
}

func (p *preparer) prepareSecret(name string, src *corev1.SecretVolumeSource) (string, error) {
	files, err := p.secretFiles(keyed{
		items:       src.Items,
		defaultMode: src.DefaultMode,
		defaultUser: src.DefaultUser,
		optional:    src.Optional != nil && *src.Optional,
	}, src.SecretName)
	if err != nil {
		return "", fmt.Errorf("volume %q: %w", name, err)
	}
	return p.writeTmpfs(pluginSecret, name, files)
}

func (p *preparer) prepareDownwardAPI(name string, src *corev1.DownwardAPIVolumeSource) (string, error) {
	files, err := downwardFiles(p.pod, src.Items, src.DefaultMode, src.DefaultUser)
	if err != nil {
		return "", fmt.Errorf("volume %q: %w", name, err)
	}
	return p.writeDisk(pluginDownwardAPI, name, files)
}

// prepareProjected merges its sources in order (a later source's path wins)
// onto one tmpfs, as the kubelet does.
func (p *preparer) prepareProjected(name string, src *corev1.ProjectedVolumeSource) (string, error) {
	files := payload{}
	for i, s := range src.Sources {
		var part payload
		var err error
		switch {
		case s.ConfigMap != nil:
			part, err = p.configMapFiles(keyed{
				items:       s.ConfigMap.Items,
				defaultMode: src.DefaultMode,
				defaultUser: src.DefaultUser,
				optional:    s.ConfigMap.Optional != nil && *s.ConfigMap.Optional,
			}, s.ConfigMap.Name)
		case s.Secret != nil:
			part, err = p.secretFiles(keyed{
				items:       s.Secret.Items,
				defaultMode: src.DefaultMode,
				defaultUser: src.DefaultUser,
				optional:    s.Secret.Optional != nil && *s.Secret.Optional,
			}, s.Secret.Name)
		case s.DownwardAPI != nil:
			part, err = downwardFiles(p.pod, s.DownwardAPI.Items, src.DefaultMode, src.DefaultUser)
		case s.ServiceAccountToken != nil:
			err = fmt.Errorf("source %d: serviceAccountToken is not supported by crib's standalone agent (no API server issues tokens): %w", i, errdefs.ErrInvalidArgument)
		default:
			err = fmt.Errorf("source %d: this projection is not supported by crib's standalone agent: %w", i, errdefs.ErrInvalidArgument)
		}
		if err != nil {
			return "", fmt.Errorf("volume %q: projected: %w", name, err)
		}
		for k, f := range part {
			files[k] = f
		}
	}
	if err := checkPaths(files); err != nil {
		return "", fmt.Errorf("volume %q: projected: %w", name, err)
	}
	return p.writeTmpfs(pluginProjected, name, files)
}

// writeDisk writes files atomically into a directory on Root's filesystem.
func (p *preparer) writeDisk(plugin, name string, files payload) (string, error) {
	dir := p.volumeDir(plugin, name)
	changed, err := writeAtomic(dir, files)
	if err != nil {
		return "", fmt.Errorf("volume %q: %w", name, err)
	}
	if changed {
		p.m.log.Debug("volume content written", "pod", string(p.pod.UID), "volume", name)
	}
	return dir, nil
}

// writeTmpfs writes files atomically onto a tmpfs mounted for the volume.
func (p *preparer) writeTmpfs(plugin, name string, files payload) (string, error) {
	dir := p.volumeDir(plugin, name)
	size := tmpfsSize(files)
	opts := []string{"nosuid", "nodev", "mode=0755", fmt.Sprintf("size=%d", size)}
	if err := p.m.ensureTmpfs(dir, opts); err != nil {
		return "", fmt.Errorf("volume %q: %w", name, err)
	}
	changed, err := writeAtomic(dir, files)
	if errors.Is(err, syscall.ENOSPC) {
		return "", fmt.Errorf("volume %q: data grew beyond the volume's tmpfs (sized when the pod started); recreate the pod: %w", name, errdefs.ErrFailedPrecondition)
	}
	if err != nil {
		return "", fmt.Errorf("volume %q: %w", name, err)
	}
	if changed {
		p.m.log.Debug("volume content written", "pod", string(p.pod.UID), "volume", name)
	}
	return dir, nil
}

// tmpfsSize sizes a secret-holding tmpfs for files.
func tmpfsSize(files payload) int64 {
	var need int64
	for _, f := range files {
		need += (int64(len(f.data)) + pageSize - 1) / pageSize * pageSize
	}
	size := 4 * need
	if size < minSecretTmpfs {
		size = minSecretTmpfs
	}
	const mib = 1 << 20
	return (size + mib - 1) / mib * mib
}

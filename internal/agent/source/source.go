package source

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/containerd/errdefs"
	corev1 "k8s.io/api/core/v1"
)

// Options tunes Load, LoadFile and the Watcher. The zero value is usable.
type Options struct {
	// NodeName is written into every pod's spec.nodeName and is part of
	// each pod's UID. Finding the host name is the caller's job; empty is
	// allowed.
	NodeName string
	// RescanInterval is how often the Watcher reloads the directory even
	// when no change was notified. Zero means 20 seconds.
	RescanInterval time.Duration
}

// Snapshot is the whole content of a manifest directory at one moment.
// Every object in it is defaulted and valid; what could not be read is in
// Errors. A snapshot belongs to its receiver: Load builds new objects on
// every call.
type Snapshot struct {
	// Pods sorted by namespace/name.
	Pods []*corev1.Pod
	// ConfigMaps and Secrets keyed "namespace/name". Never nil from Load.
	ConfigMaps map[string]*corev1.ConfigMap
	Secrets    map[string]*corev1.Secret
	// Errors has one entry per rejected file, sorted by path.
	Errors []*FileError
}

// FileError is a manifest file that was rejected as a whole.
type FileError struct {
	Path string
	Err  error
}

func (e *FileError) Error() string { return e.Path + ": " + e.Err.Error() }

func (e *FileError) Unwrap() error { return e.Err }

// Key is the "namespace/name" key of Snapshot's maps.
func Key(namespace, name string) string { return namespace + "/" + name }

// IsManifest reports whether a directory entry with this base name is read
// by Load: *.yaml, *.yml and *.json, but not hidden files (which covers
// editor swap and lock files such as .web.yaml.swp and .#web.yaml) nor
// backups ending in "~".
func IsManifest(name string) bool {
	if strings.HasPrefix(name, ".") || strings.HasSuffix(name, "~") {
		return false
	}
	switch strings.ToLower(filepath.Ext(name)) {
	case ".yaml", ".yml", ".json":
		return true
	}
	return false
}

// Load reads every manifest file in dir (not its subdirectories), in file
// name order. A file is accepted or rejected as a whole: a file with one
// bad document, or one object whose namespace/name an earlier file already
// defined, goes to Errors and contributes nothing. Load never fails; a
// missing or unreadable directory is an entry in Errors.
func Load(dir string, opts Options) Snapshot {
	snap := Snapshot{
		ConfigMaps: map[string]*corev1.ConfigMap{},
		Secrets:    map[string]*corev1.Secret{},
	}
	dir = absPath(dir)
	entries, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			err = fmt.Errorf("read manifest directory: %w: %w", errdefs.ErrNotFound, err)
		} else {
			err = fmt.Errorf("read manifest directory: %w", err)
		}
		snap.Errors = append(snap.Errors, &FileError{Path: dir, Err: err})
		return snap
	}
	owners := map[string]string{} // "kind namespace/name" -> file that defined it
	for _, entry := range entries {
		if !IsManifest(entry.Name()) {
			continue
		}
		path := filepath.Join(dir, entry.Name())
		if !isRegular(path) {
			continue
		}
		objs, err := loadPath(path, opts)
		if err == nil {
			err = claim(owners, path, objs)
		}
		if err != nil {
			snap.Errors = append(snap.Errors, &FileError{Path: path, Err: err})
			continue
		}
		snap.add(objs)
	}
	snap.sort()
	return snap
}

// LoadFile reads one manifest file the way Load reads each file of a
// directory, for `crib run pod.yaml`. Any extension is accepted; ".json"
// is read as JSON, anything else as YAML. The error is a *FileError.
func LoadFile(path string, opts Options) (Snapshot, error) {
	path = absPath(path)
	objs, err := loadPath(path, opts)
	if err == nil {
		err = claim(map[string]string{}, path, objs)
	}
	if err != nil {
		return Snapshot{}, &FileError{Path: path, Err: err}
	}
	snap := Snapshot{
		ConfigMaps: map[string]*corev1.ConfigMap{},
		Secrets:    map[string]*corev1.Secret{},
	}
	snap.add(objs)
	snap.sort()
	return snap, nil
}

// loadPath reads, decodes, defaults, validates and names every object of
// one file.
func loadPath(path string, opts Options) ([]object, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read manifest: %w", err)
	}
	objs, err := decodeFile(data, strings.EqualFold(filepath.Ext(path), ".json"))
	if err != nil {
		return nil, err
	}
	var errs []error
	for i := range objs {
		if err := prepare(&objs[i], path, opts.NodeName); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return nil, joinErrors(errs)
	}
	return objs, nil
}

// prepare defaults, validates and (for pods) names one decoded object.
func prepare(o *object, path, nodeName string) error {
	var errs []error
	switch {
	case o.pod != nil:
		defaultPod(o.pod, nodeName)
		errs = validatePod(o.pod)
		if len(errs) == 0 {
			setIdentity(o.pod, path, nodeName)
		}
	case o.configMap != nil:
		defaultConfigMap(o.configMap)
		errs = validateConfigMap(o.configMap)
		markFile(&o.configMap.ObjectMeta, path)
	case o.secret != nil:
		defaultSecret(o.secret)
		errs = validateSecret(o.secret)
		markFile(&o.secret.ObjectMeta, path)
	}
	if len(errs) > 0 {
		return &objectError{where: o.describe(), errs: errs}
	}
	return nil
}

// claim records the file as the owner of each of its objects, or fails
// naming the file that owns one already (or this file, defining it twice).
// Nothing is recorded when it fails.
func claim(owners map[string]string, path string, objs []object) error {
	mine := map[string]bool{}
	for _, o := range objs {
		k := o.kind() + " " + o.key()
		if prev, ok := owners[k]; ok {
			return existsf("%s %q: already defined in %s", o.kind(), o.key(), prev)
		}
		if mine[k] {
			return existsf("%s %q: defined twice in this file", o.kind(), o.key())
		}
		mine[k] = true
	}
	for k := range mine {
		owners[k] = path
	}
	return nil
}

func (s *Snapshot) add(objs []object) {
	for _, o := range objs {
		switch {
		case o.pod != nil:
			s.Pods = append(s.Pods, o.pod)
		case o.configMap != nil:
			s.ConfigMaps[o.key()] = o.configMap
		case o.secret != nil:
			s.Secrets[o.key()] = o.secret
		}
	}
}

func (s *Snapshot) sort() {
	slices.SortFunc(s.Pods, func(a, b *corev1.Pod) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	slices.SortFunc(s.Errors, func(a, b *FileError) int { return cmp.Compare(a.Path, b.Path) })
}

func absPath(p string) string {
	if abs, err := filepath.Abs(p); err == nil {
		return abs
	}
	return filepath.Clean(p)
}

// isRegular follows symbolic links, so a link to a manifest is read and a
// subdirectory (or a link to one) is not.
func isRegular(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular()
}

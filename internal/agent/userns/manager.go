package userns

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// FileName is the file in a pod's directory that holds its mapping.
const FileName = "userns"

// Manager keeps the node's allocations and their files in the pods'
// directories. It is safe for concurrent use.
type Manager struct {
	root string
	log  *slog.Logger

	mu    sync.Mutex
	alloc *Allocator
}

// New returns a Manager of node's blocks for the pod directories under root
// (<root>/<uid>). It does no I/O; call Load before the first Ensure.
func New(root string, node Range, log *slog.Logger) (*Manager, error) {
	if root == "" {
		return nil, errors.New("user namespaces: no pod directory root")
	}
	a, err := NewAllocator(node)
	if err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Manager{root: root, log: log, alloc: a}, nil
}

// Node is the node's range.
func (m *Manager) Node() Range { return m.alloc.Node() }

// Load records the block of every pod directory that has a mapping file, so
// that pods the runtime still runs keep theirs and no new pod gets one of
// them. A missing root is fine. A file that cannot be read back as a block
// of the node's range is logged and left out: only a whole, valid mapping
// holds a block.
func (m *Manager) Load() error {
	entries, err := os.ReadDir(m.root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("user namespaces: list pod directories: %w", err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		uid := e.Name()
		data, err := os.ReadFile(filepath.Join(m.root, uid, FileName))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err == nil {
			var r Range
			if r, err = decode(data); err == nil {
				err = m.alloc.Record(uid, r)
			}
		}
		if err != nil {
			m.log.Warn("user namespace mapping of a pod is not usable, its range is not held", "uid", uid, "err", err)
		}
	}
	m.log.Info("user namespaces", "range", m.alloc.Node().String(), "held", m.alloc.Held())
	return nil
}

// Get returns the block pod uid holds.
func (m *Manager) Get(uid string) (Range, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.alloc.Get(uid)
}

// Ensure returns the block pod uid holds. A pod that holds none is given
// one, written to its directory (made if missing) before Ensure returns, so
// that a sandbox made with it is never left without its record.
func (m *Manager) Ensure(uid string) (Range, error) {
	if uid == "" || uid == "." || uid == ".." || strings.ContainsAny(uid, "/\x00") {
		return Range{}, fmt.Errorf("user namespace: invalid pod uid %q", uid)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if r, ok := m.alloc.Get(uid); ok {
		return r, nil
	}
	r, err := m.alloc.Allocate(uid)
	if err != nil {
		return Range{}, fmt.Errorf("user namespace of pod %s: %w", uid, err)
	}
	if err := write(filepath.Join(m.root, uid), r); err != nil {
		m.alloc.Release(uid)
		return Range{}, fmt.Errorf("user namespace of pod %s: %w", uid, err)
	}
	m.log.Debug("user namespace allocated", "uid", uid, "range", r.String())
	return r, nil
}

// Release frees the block of pod uid. The caller calls it once the pod's
// directory, and with it the mapping file, is removed.
func (m *Manager) Release(uid string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if r, ok := m.alloc.Get(uid); ok {
		m.alloc.Release(uid)
		m.log.Debug("user namespace released", "uid", uid, "range", r.String())
	}
}

// fileMapping and fileFormat are the kubelet's layout of the file, so that
// the two read each other's: one mapping for uids, the same for gids,
// container id 0.
type fileMapping struct {
	HostID      uint32 `json:"hostId"`
	ContainerID uint32 `json:"containerId"`
	Length      uint32 `json:"length"`
}

type fileFormat struct {
	UIDMappings []fileMapping `json:"uidMappings"`
	GIDMappings []fileMapping `json:"gidMappings"`
}

func encode(r Range) ([]byte, error) {
	m := []fileMapping{{HostID: r.First, Length: r.Length}}
	return json.Marshal(fileFormat{UIDMappings: m, GIDMappings: m})
}

func decode(data []byte) (Range, error) {
	var f fileFormat
	if err := json.Unmarshal(data, &f); err != nil {
		return Range{}, fmt.Errorf("parse %s: %w", FileName, err)
	}
	if len(f.UIDMappings) != 1 || len(f.GIDMappings) != 1 {
		return Range{}, fmt.Errorf("%s: want one uid and one gid mapping, have %d and %d", FileName, len(f.UIDMappings), len(f.GIDMappings))
	}
	u, g := f.UIDMappings[0], f.GIDMappings[0]
	if u != g {
		return Range{}, fmt.Errorf("%s: the uid and gid mappings differ", FileName)
	}
	if u.ContainerID != 0 {
		return Range{}, fmt.Errorf("%s: the mapping starts at container id %d, not 0", FileName, u.ContainerID)
	}
	return Range{First: u.HostID, Length: u.Length}, nil
}

// write puts r in dir's mapping file atomically and durably: a temporary
// file, synced, renamed over the name, and the directory synced.
func write(dir string, r Range) error {
	data, err := encode(r)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return fmt.Errorf("create pod directory: %w", err)
	}
	tmp, err := os.CreateTemp(dir, "."+FileName+"-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", FileName, err)
	}
	defer os.Remove(tmp.Name()) // a no-op once renamed
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", FileName, err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("sync %s: %w", FileName, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", FileName, err)
	}
	if err := os.Rename(tmp.Name(), filepath.Join(dir, FileName)); err != nil {
		return fmt.Errorf("write %s: %w", FileName, err)
	}
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync pod directory: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync pod directory: %w", err)
	}
	return nil
}

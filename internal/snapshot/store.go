package snapshot

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/containerd/errdefs"
	"github.com/opencontainers/go-digest"
)

const (
	fsDirName     = "fs"
	committedName = "committed"
	tmpPrefix     = "tmp-"
)

// Options configure a Store. The zero value is valid.
type Options struct {
	// Limits bound what one layer may unpack to; the zero value bounds
	// nothing.
	Limits Limits
}

// Store is the set of unpacked snapshots under one root. It is safe for
// concurrent use; two unpacks of the same chain ID race harmlessly (the
// loser's copy is discarded).
type Store struct {
	dir  string
	opts Options
}

// Info describes a committed snapshot; it is what the completion file holds.
type Info struct {
	ChainID digest.Digest `json:"chainID"`
	Parent  digest.Digest `json:"parent,omitempty"`
	DiffID  digest.Digest `json:"diffID"`
	// Size is the uncompressed size of the layer tar in bytes.
	Size int64 `json:"size"`
}

// Open prepares <root>/snapshots, removing temporary directories and
// snapshots without a completion file that a crash left behind.
func Open(root string, opts Options) (*Store, error) {
	s := &Store{dir: filepath.Join(root, "snapshots"), opts: opts}
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return nil, fmt.Errorf("create snapshot dir: %w", err)
	}
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		return nil, fmt.Errorf("read snapshot dir: %w", err)
	}
	for _, e := range entries {
		p := filepath.Join(s.dir, e.Name())
		stale := strings.HasPrefix(e.Name(), tmpPrefix)
		if !stale {
			_, err := os.Stat(filepath.Join(p, committedName))
			stale = errors.Is(err, fs.ErrNotExist)
		}
		if stale {
			if err := os.RemoveAll(p); err != nil {
				return nil, fmt.Errorf("remove stale snapshot %s: %w", e.Name(), err)
			}
		}
	}
	return s, nil
}

func validChainID(id digest.Digest) error {
	if id.Algorithm() != digest.SHA256 || id.Validate() != nil {
		return fmt.Errorf("chain id %q: %w", id, errdefs.ErrInvalidArgument)
	}
	return nil
}

func (s *Store) snapDir(id digest.Digest) string { return filepath.Join(s.dir, id.Encoded()) }

// Stat returns the committed snapshot's info; errdefs.ErrNotFound when it
// is absent or incomplete.
func (s *Store) Stat(id digest.Digest) (Info, error) {
	if err := validChainID(id); err != nil {
		return Info{}, err
	}
	b, err := os.ReadFile(filepath.Join(s.snapDir(id), committedName))
	if errors.Is(err, fs.ErrNotExist) {
		return Info{}, fmt.Errorf("snapshot %s: %w", id, errdefs.ErrNotFound)
	}
	if err != nil {
		return Info{}, fmt.Errorf("read snapshot %s: %w", id, err)
	}
	var info Info
	if err := json.Unmarshal(b, &info); err != nil {
		return Info{}, fmt.Errorf("decode snapshot %s: %w", id, err)
	}
	return info, nil
}

// Exists reports whether a committed snapshot for id is present.
func (s *Store) Exists(id digest.Digest) bool {
	_, err := s.Stat(id)
	return err == nil
}

// List returns the chain IDs of all committed snapshots.
func (s *Store) List() ([]digest.Digest, error) {
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		return nil, fmt.Errorf("read snapshot dir: %w", err)
	}
	var ids []digest.Digest
	for _, e := range entries {
		id := digest.NewDigestFromEncoded(digest.SHA256, e.Name())
		if id.Validate() == nil && s.Exists(id) {
			ids = append(ids, id)
		}
	}
	return ids, nil
}

// Path returns the directory holding the snapshot's files (the overlay
// lowerdir), or errdefs.ErrNotFound when the snapshot is not committed.
func (s *Store) Path(id digest.Digest) (string, error) {
	if _, err := s.Stat(id); err != nil {
		return "", err
	}
	return filepath.Join(s.snapDir(id), fsDirName), nil
}

// LowerDirs returns the overlay lowerdir list for a stack of snapshots given
// bottom layer first (image order): top-most first, as overlayfs wants it.
func (s *Store) LowerDirs(chainIDs []digest.Digest) ([]string, error) {
	dirs := make([]string, 0, len(chainIDs))
	for i := len(chainIDs) - 1; i >= 0; i-- {
		p, err := s.Path(chainIDs[i])
		if err != nil {
			return nil, fmt.Errorf("lower dirs: %w", err)
		}
		dirs = append(dirs, p)
	}
	return dirs, nil
}

// Remove deletes the snapshot. It first renames the directory to a tmp-*
// name, so a crash mid-delete leaves only what Open cleans up. Removing an
// absent snapshot is not an error.
func (s *Store) Remove(id digest.Digest) error {
	if err := validChainID(id); err != nil {
		return err
	}
	doomed := filepath.Join(s.dir, fmt.Sprintf("%srm-%s-%d", tmpPrefix, id.Encoded(), time.Now().UnixNano()))
	if err := os.Rename(s.snapDir(id), doomed); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return fmt.Errorf("remove snapshot %s: %w", id, err)
	}
	if err := os.RemoveAll(doomed); err != nil {
		return fmt.Errorf("remove snapshot %s: %w", id, err)
	}
	return nil
}

package image

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/containerd/errdefs"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/opencontainers/go-digest"
	imagespec "github.com/opencontainers/image-spec/specs-go/v1"
	"golang.org/x/sys/unix"

	"github.com/crib-dev/crib/internal/content"
	"github.com/crib-dev/crib/internal/kernelstats"
	"github.com/crib-dev/crib/internal/sigpolicy"
	"github.com/crib-dev/crib/internal/snapshot"
)

// Config configures a Store. Only Root is required.
type Config struct {
	// Root holds everything: blobs/, ingest/, snapshots/, images/, tmp/.
	Root string
	// Registries holds per-registry settings keyed by registry host as it
	// appears in image names ("docker.io", "registry.k8s.io",
	// "127.0.0.1:5000"). A host without an entry is used directly.
	Registries map[string]Registry
	// LayerLimits bound what one layer may unpack to (decompression bombs,
	// entry floods); the zero value bounds nothing.
	LayerLimits snapshot.Limits
	// Platform selects the image from a multi-arch index; the zero value
	// means runtime.GOOS/runtime.GOARCH.
	Platform v1.Platform
	// PullConcurrency bounds how many layer blobs one pull downloads at
	// once; 0 means DefaultPullConcurrency.
	PullConcurrency int
	// PullProgressTimeout abandons a blob download when no byte arrived
	// for this long; 0 means DefaultPullProgressTimeout.
	PullProgressTimeout time.Duration
	// Pulls, when set, is told of every pull and the bytes it downloads.
	Pulls PullRecorder
	// SignaturePolicy, when it names a policy, decides from each pulled
	// manifest and its signatures whether the image may be pulled, before
	// any of its blobs is fetched; SetSignaturePolicy replaces it.
	SignaturePolicy sigpolicy.Config
}

// Registry holds the settings of one registry host.
type Registry struct {
	// Mirrors are endpoints ("http://127.0.0.1:5000", "https://mirror.example")
	// tried in order before the host itself. An http:// mirror is spoken to
	// in plain HTTP. Credentials passed to Pull are not sent to mirrors.
	Mirrors []string
	// Insecure allows plain HTTP and skips TLS verification for the host.
	Insecure bool
}

// Image is what the store knows of one image.
type Image struct {
	// ID is "sha256:<hex of the config digest>", the one image id everywhere.
	ID string
	// RepoTags are normalized tag references: docker.io/library/busybox:latest.
	RepoTags []string
	// RepoDigests are normalized digest references of the manifest (or of
	// the index, for a multi-arch image) as pulled.
	RepoDigests []string
	// Size is the sum of the compressed layer blobs and the config blob, in
	// bytes, as the manifest states them.
	Size int64
	// Config is the image configuration (Config.Env, Cmd, Entrypoint, ...).
	Config imagespec.Image
	// ChainIDs are the layers' chain IDs, bottom layer first.
	ChainIDs []string
	// Pinned images are exempt from the kubelet's image garbage collection.
	Pinned bool
	// Annotations are those of the image's manifest as pulled.
	Annotations map[string]string
}

// Auth is the credential for one pull, mirroring CRI's AuthConfig. The zero
// value means anonymous.
type Auth struct {
	Username      string
	Password      string
	Auth          string
	IdentityToken string
	RegistryToken string
}

// FsUsage is the disk use of the image filesystem.
type FsUsage struct {
	Mountpoint string // the store's root directory
	UsedBytes  uint64
	InodesUsed uint64
}

// Store is the image store. It is safe for concurrent use.
type Store struct {
	// cfg is fixed but for cfg.Registries, which regMu guards: a reload
	// replaces it (SetRegistries).
	cfg      Config
	regMu    sync.RWMutex
	content  *content.Store
	snaps    *snapshot.Store
	records  recordDir
	tmpDir   string
	platform v1.Platform
	// sigs holds the signature policy in force (cfg.SignaturePolicy is
	// only its first value).
	sigs *sigpolicy.Checker

	// mu guards the in-memory index; held only briefly, never during
	// downloads or unpacking. Lock order: refMu before mu.
	mu     sync.RWMutex
	images map[string]*record // by ID
	names  map[string]string  // normalized tag/digest reference -> ID

	// refMu guards retained references and serialises deletion of blobs
	// and snapshots against pulls that are about to rely on them.
	refMu          sync.Mutex
	retainedChains map[string]int
	retainedBlobs  map[string]int
	// garbageChains and garbageBlobs lost their last reference in a
	// removal that then failed to delete them; the next removal tries
	// again (and the next start's Prune, should none come).
	garbageChains, garbageBlobs []string
	// mountedBy names, per image ID, the containers that mount the image
	// as a volume: such an image cannot be removed.
	mountedBy map[string]map[string]bool

	// pulls serialises work on one blob or one chain ID across pulls;
	// flights shares whole pulls of one reference.
	pulls   keyedMutex
	flights flights

	// lock is the open lock file whose exclusive flock says this process
	// owns the store; released by Close.
	lock *os.File
}

// Open opens (or creates) the store under cfg.Root, loads every image
// record and removes leftovers of interrupted work.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	if cfg.Root == "" {
		return nil, fmt.Errorf("open image store: root not set: %w", errdefs.ErrInvalidArgument)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s := &Store{
		cfg:            cfg,
		records:        recordDir(filepath.Join(cfg.Root, "images")),
		tmpDir:         filepath.Join(cfg.Root, "tmp"),
		sigs:           sigpolicy.New(cfg.SignaturePolicy, filepath.Join(cfg.Root, "tmp")),
		platform:       cfg.Platform,
		images:         map[string]*record{},
		names:          map[string]string{},
		retainedChains: map[string]int{},
		retainedBlobs:  map[string]int{},
		mountedBy:      map[string]map[string]bool{},
	}
	if s.platform.OS == "" {
		s.platform.OS = runtime.GOOS
	}
	if s.platform.Architecture == "" {
		s.platform.Architecture = runtime.GOARCH
	}
	if err := os.MkdirAll(cfg.Root, 0o700); err != nil {
		return nil, fmt.Errorf("open image store: %w", err)
	}
	// One process owns a store at a time: opening cleans up temporary
	// files, which would pull the floor from under another owner's pulls.
	lock, err := lockStore(filepath.Join(cfg.Root, "lock"))
	if err != nil {
		return nil, err
	}
	s.lock = lock
	defer func() {
		if s.content == nil || s.snaps == nil {
			lock.Close()
		}
	}()
	if s.content, err = content.Open(cfg.Root); err != nil {
		return nil, fmt.Errorf("open image store: %w", err)
	}
	if s.snaps, err = snapshot.Open(cfg.Root, snapshot.Options{Limits: cfg.LayerLimits}); err != nil {
		return nil, fmt.Errorf("open image store: %w", err)
	}
	if err := os.RemoveAll(s.tmpDir); err != nil {
		return nil, fmt.Errorf("open image store: clean tmp: %w", err)
	}
	if err := os.MkdirAll(s.tmpDir, 0o700); err != nil {
		return nil, fmt.Errorf("open image store: %w", err)
	}
	recs, err := s.records.load()
	if err != nil {
		return nil, fmt.Errorf("open image store: %w", err)
	}
	for _, r := range recs {
		s.images[r.ID] = r
		for _, n := range r.names() {
			// A crash during a tag move can leave a name on two records;
			// the first (by file name) keeps it.
			if _, taken := s.names[n]; taken {
				r.dropName(n)
				continue
			}
			s.names[n] = r.ID
		}
	}
	return s, nil
}

// lockStore takes the store's exclusive lock, or says who has it.
func lockStore(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open image store lock: %w", err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, fmt.Errorf("image store %s is in use by another process (a running crib daemon?): %w",
				filepath.Dir(path), errdefs.ErrUnavailable)
		}
		return nil, fmt.Errorf("lock image store: %w", err)
	}
	return f, nil
}

// Close releases the store for another process to open.
func (s *Store) Close() error {
	return s.lock.Close()
}

// List returns every image, sorted by ID. It does no I/O.
func (s *Store) List() []Image {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]Image, 0, len(s.images))
	for _, r := range s.images {
		out = append(out, r.image())
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// Resolve finds an image by full ID ("sha256:<hex>"), bare hex ID, unique ID
// prefix of at least 12 hex digits (with or without "sha256:"), tag or digest
// reference, or short name ("busybox", "busybox:1.36", "foo/bar"). A missing
// image is errdefs.ErrNotFound. It does no I/O.
func (s *Store) Resolve(ref string) (Image, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	r, err := s.resolveLocked(ref)
	if err != nil {
		return Image{}, err
	}
	return r.image(), nil
}

// resolveLocked returns the record ref names, and the normalized name it
// was found by ("" when found by ID).
func (s *Store) resolveLocked(ref string) (*record, error) {
	r, _, err := s.resolveNameLocked(ref)
	return r, err
}

func (s *Store) resolveNameLocked(ref string) (*record, string, error) {
	if hex, ok := idHex(ref); ok && (len(hex) >= 12 || strings.HasPrefix(ref, "sha256:")) {
		if r, ok := s.images["sha256:"+hex]; ok {
			return r, "", nil
		}
		var found *record
		for id, r := range s.images {
			if len(hex) >= 12 && strings.HasPrefix(id, "sha256:"+hex) {
				if found != nil {
					return nil, "", fmt.Errorf("image id prefix %q is ambiguous: %w", ref, errdefs.ErrInvalidArgument)
				}
				found = r
			}
		}
		if found != nil {
			return found, "", nil
		}
		if strings.HasPrefix(ref, "sha256:") {
			return nil, "", fmt.Errorf("image %q: %w", ref, errdefs.ErrNotFound)
		}
	}
	n, err := Normalize(ref)
	if err != nil {
		return nil, "", err
	}
	if id, ok := s.names[n]; ok {
		return s.images[id], n, nil
	}
	return nil, "", fmt.Errorf("image %q: %w", ref, errdefs.ErrNotFound)
}

// LowerDirs returns the overlay lowerdir list of img, top-most layer first.
// It reads only the snapshot completion files.
func (s *Store) LowerDirs(img Image) ([]string, error) {
	ids, err := toDigests(img.ChainIDs)
	if err != nil {
		return nil, err
	}
	dirs, err := s.snaps.LowerDirs(ids)
	if err != nil {
		return nil, fmt.Errorf("image %s: %w", img.ID, err)
	}
	return dirs, nil
}

// SetPinned marks the image ref names as pinned or not.
func (s *Store) SetPinned(ref string, pinned bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, err := s.resolveLocked(ref)
	if err != nil {
		return err
	}
	if r.Pinned == pinned {
		return nil
	}
	next := r.clone()
	next.Pinned = pinned
	if err := s.records.write(next); err != nil {
		return err
	}
	s.images[next.ID] = next
	return nil
}

// Retain marks chain IDs as in use (by a container): while retained they
// are not deleted even if no image references them any more. Calls nest:
// each Retain needs one Release.
func (s *Store) Retain(chainIDs []string) {
	s.refMu.Lock()
	defer s.refMu.Unlock()
	for _, id := range chainIDs {
		s.retainedChains[id]++
	}
}

// Hold records that container mounts the image id as a volume: until
// Unhold, Remove and PruneImages leave the image alone. Holding an image
// that is gone is errdefs.ErrNotFound, so a Remove racing a container's
// creation either wins before the hold or is refused after it.
func (s *Store) Hold(id, container string) error {
	s.refMu.Lock()
	defer s.refMu.Unlock()
	s.mu.RLock()
	_, ok := s.images[id]
	s.mu.RUnlock()
	if !ok {
		return fmt.Errorf("image %s: %w", id, errdefs.ErrNotFound)
	}
	if s.mountedBy[id] == nil {
		s.mountedBy[id] = map[string]bool{}
	}
	s.mountedBy[id][container] = true
	return nil
}

// Unhold undoes Hold. Unholding what is not held is not an error.
func (s *Store) Unhold(id, container string) {
	s.refMu.Lock()
	defer s.refMu.Unlock()
	delete(s.mountedBy[id], container)
	if len(s.mountedBy[id]) == 0 {
		delete(s.mountedBy, id)
	}
}

// heldLocked says which container (the first by id) mounts image id, or
// "" when none does. refMu must be held.
func (s *Store) heldLocked(id string) string {
	first := ""
	for c := range s.mountedBy[id] {
		if first == "" || c < first {
			first = c
		}
	}
	return first
}

// Release undoes one Retain of the chain IDs. Snapshots released this way
// are not deleted immediately; the next Remove or Prune that finds them
// unreferenced does.
func (s *Store) Release(chainIDs []string) {
	s.refMu.Lock()
	defer s.refMu.Unlock()
	release(s.retainedChains, chainIDs)
}

func release(m map[string]int, keys []string) {
	for _, k := range keys {
		if m[k] <= 1 {
			delete(m, k)
		} else {
			m[k]--
		}
	}
}

// FsInfo reports the disk blocks and distinct inodes used under the root.
func (s *Store) FsInfo() (FsUsage, error) {
	u, err := kernelstats.Disk(context.Background(), s.cfg.Root, 0)
	if err != nil {
		return FsUsage{}, fmt.Errorf("measure image fs usage: %w", err)
	}
	return FsUsage{Mountpoint: s.cfg.Root, UsedBytes: u.Bytes, InodesUsed: u.Inodes}, nil
}

func toDigests(ids []string) ([]digest.Digest, error) {
	out := make([]digest.Digest, len(ids))
	for i, id := range ids {
		d, err := digest.Parse(id)
		if err != nil {
			return nil, fmt.Errorf("parse digest %q: %v: %w", id, err, errdefs.ErrInvalidArgument)
		}
		out[i] = d
	}
	return out, nil
}

// keyedMutex serialises work per key ("blob:<digest>", "chain:<id>").
type keyedMutex struct {
	mu    sync.Mutex
	locks map[string]*keyedLock
}

type keyedLock struct {
	mu    sync.Mutex
	users int
}

// lock takes the lock for key, waiting for ctx; it returns the unlock func.
func (k *keyedMutex) lock(ctx context.Context, key string) (func(), error) {
	k.mu.Lock()
	if k.locks == nil {
		k.locks = map[string]*keyedLock{}
	}
	l := k.locks[key]
	if l == nil {
		l = &keyedLock{}
		k.locks[key] = l
	}
	l.users++
	k.mu.Unlock()
	done := func() {
		k.mu.Lock()
		l.users--
		if l.users == 0 {
			delete(k.locks, key)
		}
		k.mu.Unlock()
	}
	got := make(chan struct{})
	go func() {
		l.mu.Lock()
		close(got)
	}()
	select {
	case <-got:
		return func() { l.mu.Unlock(); done() }, nil
	case <-ctx.Done():
		go func() { <-got; l.mu.Unlock(); done() }()
		return nil, ctx.Err()
	}
}

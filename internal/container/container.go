package container

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/containerd/errdefs"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/crib-dev/crib/internal/cdi"
	"github.com/crib-dev/crib/internal/cgroupfs"
	"github.com/crib-dev/crib/internal/ids"
	"github.com/crib-dev/crib/internal/image"
	"github.com/crib-dev/crib/internal/lifecycle"
	"github.com/crib-dev/crib/internal/metastore"
	"github.com/crib-dev/crib/internal/monitor"
	"github.com/crib-dev/crib/internal/namereserve"
	"github.com/crib-dev/crib/internal/ociruntime"
	"github.com/crib-dev/crib/internal/ocispec"
	"github.com/crib-dev/crib/internal/resclass"
	"github.com/crib-dev/crib/internal/sandbox"
	"github.com/crib-dev/crib/internal/snapshot"
)

const (
	recordKind    = "containers"
	recordVersion = 1
)

// Container is one CRI container. Values handed out by the Manager are
// copies; Config must not be modified.
type Container struct {
	ID        string
	SandboxID string
	Config    *runtimeapi.ContainerConfig
	// ImageID is the image's id ("sha256:..."); ImageRef is the reference
	// the kubelet reports (a repo digest when there is one, else the id).
	ImageID  string
	ImageRef string
	// ImageName is the image as the pod named it, what ContainerStatus
	// reports (see statusImage); empty in records written before it was
	// kept, which StatusImage then works out from Config.
	ImageName string `json:",omitempty"`
	// ChainIDs are the image layers the rootfs stands on, retained in the
	// image store while the container exists.
	ChainIDs []string
	// RuntimeHandler is the sandbox's OCI runtime.
	RuntimeHandler string
	State          State
	CreatedAt      time.Time
	StartedAt      time.Time
	FinishedAt     time.Time
	ExitCode       int32
	Reason         string
	Message        string
	// Pid is the container's init on the host while it runs.
	Pid int
	// LogPath is the CRI log file (LogDirectory + LogPath), or "".
	LogPath string
	// CgroupsPath is the container's cgroup as its OCI spec names it (a
	// path below the hierarchies' roots, or systemd's slice:prefix:name).
	CgroupsPath string
	// StopSignal is the image's STOPSIGNAL, used when the CRI config names
	// none.
	StopSignal string
	// User is the identity the container's process runs as, resolved
	// from the CRI config and the image's /etc/passwd and /etc/group.
	User specs.User
	// ImageVolumes are the images the container mounts, in mount order.
	ImageVolumes []ImageVolume
	// RestoreImages, set for a container created from a checkpoint
	// archive, is the directory of CRIU images Start restores its
	// processes from.
	RestoreImages string `json:",omitempty"`
}

// record is the on-disk form of a Container.
type record struct {
	Container
	Config []byte // protobuf of ContainerConfig
}

// Images is what the Manager needs of the image store.
type Images interface {
	Resolve(ref string) (image.Image, error)
	LowerDirs(img image.Image) ([]string, error)
	Retain(chainIDs []string)
	Release(chainIDs []string)
	// Hold and Unhold keep an image a container mounts as a volume from
	// being removed.
	Hold(id, container string) error
	Unhold(id, container string)
}

// Sandboxes is what the Manager needs of the sandbox manager.
type Sandboxes interface {
	Get(id string) (sandbox.Sandbox, error)
}

// Config is the Manager's configuration.
type Config struct {
	// BundleDir holds one OCI bundle (config.json, rootfs, overlay upper and
	// work dirs) per container; it survives reboots.
	BundleDir string
	// StateDir holds per-container runtime files: the monitor's socket, pid
	// file, log and the exit record.
	StateDir string
	// Monitors starts the containers' monitors.
	Monitors *monitor.Pool
	// Runtimes are the OCI runtimes by handler; "" is the default.
	Runtimes map[string]*ociruntime.Runtime
	// CgroupDriver is "cgroupfs" or "systemd"; CgroupV2 is set on a
	// unified-hierarchy host.
	CgroupDriver string
	CgroupV2     bool
	// OOMScoreAdjMin is the lowest oom_score_adj crib may give a container.
	OOMScoreAdjMin int
	// Hugetlb says the hugetlb cgroup controller is available.
	Hugetlb bool
	// HostCaps bounds the capabilities containers may get.
	HostCaps ocispec.HostCaps
	// Events, when set, is told of every container created, started,
	// stopped (exited) and removed; nil publishes nothing.
	Events lifecycle.Publisher
	// Tracer, when set, is told of the phases of each container's start.
	Tracer Tracer
	// CDI resolves the CDI devices containers ask for; nil resolves none.
	CDI *cdi.Registry
	// Classes resolves the block I/O and RDT classes annotations name;
	// nil has none, and a container naming one is refused.
	Classes *resclass.Classes
	// Plugins are told of each container's lifecycle and may adjust it
	// (NRI); nil is none.
	Plugins Plugins
	// Criu and CriuNoBreakpoints are how the runtime runs CRIU to restore
	// a container from a checkpoint archive (ociruntime.CriuEnv).
	Criu              string
	CriuNoBreakpoints bool
	// LayerLimits bound a checkpoint archive's writable layer as they
	// bound an image layer.
	LayerLimits snapshot.Limits
}

// Manager runs the containers of one daemon.
type Manager struct {
	cfg       Config
	db        *metastore.DB
	log       *slog.Logger
	images    Images
	sandboxes Sandboxes
	names     *namereserve.Names

	mu   sync.RWMutex
	byID map[string]*entry
	// bySandbox indexes byID by the containers' sandbox, so that a pod's
	// stop and removal find its containers without a scan of the node's.
	bySandbox map[string]map[string]*entry

	// rtMu guards cfg.Runtimes, which a
	// configuration reload replaces (SetRuntimes).
	rtMu sync.RWMutex

	// cgroups are the host's cgroup hierarchies, found at the first
	// teardown that needs them (they are mounted once, at boot) and kept
	// once found; a failure to find them is not kept, so the next
	// teardown looks again.
	cgroupsMu sync.Mutex
	cgroups   *cgroupfs.Hierarchies

	// closed is closed by Close, which ends the watches of monitors;
	// watching is cancelled with it, so that a watch needs no goroutine
	// of its own to see it.
	closed    chan struct{}
	watching  context.Context
	endWatch  context.CancelFunc
	closeOnce sync.Once
	// writesBehind are the records updateBehind is writing; Close waits
	// for them.
	writesBehind sync.WaitGroup
}

// entry is a container in memory with what waits on it.
type entry struct {
	c Container
	// exited is closed, by finish, once the container's exit is recorded.
	exited chan struct{}
	done   sync.Once
	// op serialises Start, Stop and Remove of this container.
	op sync.Mutex
	// released: Stop has unmounted the stopped container's rootfs and
	// deleted it from the runtime (release); under op.
	released bool
	// record serialises the writes of this container's record (updates
	// and the removal), so that they reach the database in the order
	// they are made, without holding the manager's lock, which every
	// List takes, across a sync to disk.
	record sync.Mutex
}

// finish marks the container's exit as recorded; it may be called more
// than once.
func (e *entry) finish() { e.done.Do(func() { close(e.exited) }) }

// New returns a Manager; it does no I/O until Restore.
func New(cfg Config, db *metastore.DB, images Images, sandboxes Sandboxes, log *slog.Logger) *Manager {
	if cfg.Tracer == nil {
		cfg.Tracer = noTracer{}
	}
	watching, endWatch := context.WithCancel(context.Background())
	return &Manager{
		cfg: cfg, db: db, log: log, images: images, sandboxes: sandboxes,
		names: namereserve.New(), byID: map[string]*entry{},
		closed: make(chan struct{}), watching: watching, endWatch: endWatch,
	}
}

// hierarchies are the host's cgroup hierarchies: found once, then kept.
func (m *Manager) hierarchies() (cgroupfs.Hierarchies, error) {
	m.cgroupsMu.Lock()
	defer m.cgroupsMu.Unlock()
	if m.cgroups == nil {
		h, err := cgroupfs.Find("/sys/fs/cgroup")
		if err != nil {
			return cgroupfs.Hierarchies{}, err
		}
		m.cgroups = &h
	}
	return *m.cgroups, nil
}

// Close stops watching the containers' monitors, so that nothing records
// an exit in the metadata store once the daemon closes it. Containers and
// their monitors keep running; the next daemon's Restore adopts them.
func (m *Manager) Close() {
	m.closeOnce.Do(func() { close(m.closed); m.endWatch() })
	// The records written behind their changes reach the store before it
	// closes, rather than being left to the next start to work out.
	m.writesBehind.Wait()
}

func nameKey(sandboxID string, md *runtimeapi.ContainerMetadata) string {
	return fmt.Sprintf("%s_%s_%d", sandboxID, md.GetName(), md.GetAttempt())
}

func (m *Manager) bundle(id string) string   { return filepath.Join(m.cfg.BundleDir, id) }
func (m *Manager) stateDir(id string) string { return filepath.Join(m.cfg.StateDir, id) }
func (m *Manager) exitFile(id string) string { return filepath.Join(m.stateDir(id), "exit.json") }

// pidFile is where the runtime writes the container's pid once it made it.
func (m *Manager) pidFile(id string) string { return filepath.Join(m.stateDir(id), "pid") }

// socket is the monitor's control socket. Unix socket paths are limited to
// 108 bytes, so it is named by a 16-digit id prefix beside the container's
// state dir rather than inside it.
func (m *Manager) socket(id string) string { return filepath.Join(m.cfg.StateDir, id[:16]+".sock") }

func (m *Manager) save(c *Container) error {
	cfg, err := proto.Marshal(c.Config)
	if err != nil {
		return fmt.Errorf("encode container %s config: %w", c.ID, err)
	}
	return m.db.Put(recordKind, c.ID, recordVersion, record{Container: *c, Config: cfg})
}

// Get returns the container with id, or a unique id prefix.
func (m *Manager) Get(id string) (Container, error) {
	e, err := m.entry(id)
	if err != nil {
		return Container{}, err
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	return e.c, nil
}

func (m *Manager) entry(id string) (*entry, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return ids.Find(m.byID, id, "container")
}

// index adds e to byID and bySandbox; the caller holds mu.
func (m *Manager) index(e *entry) {
	m.byID[e.c.ID] = e
	if m.bySandbox == nil {
		m.bySandbox = map[string]map[string]*entry{}
	}
	in := m.bySandbox[e.c.SandboxID]
	if in == nil {
		in = map[string]*entry{}
		m.bySandbox[e.c.SandboxID] = in
	}
	in[e.c.ID] = e
}

// unindex removes the container id of sandbox from byID and bySandbox;
// the caller holds mu.
func (m *Manager) unindex(sandbox, id string) {
	delete(m.byID, id)
	if in := m.bySandbox[sandbox]; in != nil {
		delete(in, id)
		if len(in) == 0 {
			delete(m.bySandbox, sandbox)
		}
	}
}

// List returns every container, oldest first.
func (m *Manager) List() []Container {
	m.mu.RLock()
	defer m.mu.RUnlock()
	// Sorted as pointers, then copied once: a Container is ~400 bytes,
	// and sorting the copies moved megabytes per list of 1,000.
	entries := make([]*entry, 0, len(m.byID))
	for _, e := range m.byID {
		entries = append(entries, e)
	}
	slices.SortFunc(entries, func(a, b *entry) int { return a.c.CreatedAt.Compare(b.c.CreatedAt) })
	out := make([]Container, len(entries))
	for i, e := range entries {
		out[i] = e.c
	}
	return out
}

// InSandbox returns the containers of the sandbox, oldest first, from
// the sandbox's index: its cost is the pod's containers, not the node's.
func (m *Manager) InSandbox(sandboxID string) []Container {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make([]Container, 0, len(m.bySandbox[sandboxID]))
	for _, e := range m.bySandbox[sandboxID] {
		out = append(out, e.c)
	}
	slices.SortFunc(out, func(a, b Container) int { return a.CreatedAt.Compare(b.CreatedAt) })
	return out
}

// update applies fn to the container's record under its record lock,
// checks the state transition if fn changes the state, persists the result,
// and only then shows it to readers.
func (m *Manager) update(e *entry, fn func(c *Container)) error {
	e.record.Lock()
	defer e.record.Unlock()
	next, prev, err := m.next(e, fn)
	if err != nil {
		return err
	}
	if err := m.save(&next); err != nil {
		return err
	}
	m.show(e, next, prev)
	return nil
}

// updateBehind is update for a change that a restart finds out by itself
// should the daemon die before the record is written: it shows the
// result to readers at once and writes the record in the background,
// still under the record lock, so that the container's next update or its
// removal waits for it and the records reach the database in order. A
// record that cannot be written is logged: the restart finds out.
func (m *Manager) updateBehind(e *entry, fn func(c *Container)) error {
	e.record.Lock()
	next, prev, err := m.next(e, fn)
	if err != nil {
		e.record.Unlock()
		return err
	}
	m.show(e, next, prev)
	m.writesBehind.Add(1)
	go func() {
		defer m.writesBehind.Done()
		defer e.record.Unlock()
		if err := m.save(&next); err != nil {
			m.log.Error("record container", "container", next.ID, "state", next.State, "err", err)
		}
	}()
	return nil
}

// next is the container as fn changes it, and its state before, with the
// transition checked; the caller holds e.record.
func (m *Manager) next(e *entry, fn func(c *Container)) (Container, State, error) {
	m.mu.RLock()
	removed := m.byID[e.c.ID] != e
	next := e.c
	m.mu.RUnlock()
	if removed {
		// Its record must not come back.
		return next, next.State, fmt.Errorf("container %s: %w", e.c.ID, errdefs.ErrNotFound)
	}
	// Only update and updateBehind write e.c of a listed container, under
	// e.record: it cannot change while the record is saved.
	prev := next.State
	fn(&next)
	if next.State != prev {
		if err := prev.to(next.State); err != nil {
			return next, prev, fmt.Errorf("container %s: %w", e.c.ID, err)
		}
	}
	return next, prev, nil
}

// show makes next the container readers see; the caller holds e.record.
func (m *Manager) show(e *entry, next Container, prev State) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e.c = next
	if k, ok := next.State.event(); ok && next.State != prev {
		// Under e.record, so that a container's events leave in the
		// order of its transitions.
		m.publish(k, &next)
	}
}

// publish tells cfg.Events of a transition of c; it never blocks.
func (m *Manager) publish(kind lifecycle.Kind, c *Container) {
	if m.cfg.Events == nil {
		return
	}
	m.cfg.Events.Publish(lifecycle.Event{Kind: kind, ID: c.ID, SandboxID: c.SandboxID, At: time.Now()})
}

// locked finds the container id (or a unique prefix) and takes the lock
// that serialises its Start, Stop, Remove and updates. It returns the
// container as it is under that lock; one removed while this call waited
// is errdefs.ErrNotFound. The caller unlocks e.op.
func (m *Manager) locked(id string) (*entry, Container, error) {
	e, err := m.entry(id)
	if err != nil {
		return nil, Container{}, err
	}
	e.op.Lock()
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.byID[e.c.ID] != e {
		e.op.Unlock()
		return nil, Container{}, fmt.Errorf("container %s: %w", e.c.ID, errdefs.ErrNotFound)
	}
	return e, e.c, nil
}

// waitExited waits until the container has exited or ctx is done.
func waitExited(ctx context.Context, e *entry) bool {
	select {
	case <-e.exited:
		return true
	case <-ctx.Done():
		return false
	}
}

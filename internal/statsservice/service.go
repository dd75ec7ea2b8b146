package statsservice

import (
	"sync/atomic"

	"github.com/crib-dev/crib/internal/container"
	"github.com/crib-dev/crib/internal/image"
	"github.com/crib-dev/crib/internal/kernelstats"
	"github.com/crib-dev/crib/internal/sandbox"
)

// writableLayerMaxEntries bounds the walk of a writable layer; a larger
// layer is reported by its first entries.
const writableLayerMaxEntries = 100_000

// Config says how to read cgroups.
type Config struct {
	// Cgroups is where the cgroups are and how the configured cgroup
	// driver names them; its zero value is cgroup v1 under
	// /sys/fs/cgroup, named as the cgroupfs driver does.
	Cgroups kernelstats.Config
}

// Containers is what the service needs of the container manager.
type Containers interface {
	Get(id string) (container.Container, error)
	List() []container.Container
	StatsPaths(container.Container) (container.StatsPaths, error)
}

// Sandboxes is what the service needs of the sandbox manager.
type Sandboxes interface {
	Get(id string) (sandbox.Sandbox, error)
}

// Images is what the service needs of the image store.
type Images interface {
	FsInfo() (image.FsUsage, error)
}

// Service reads usage. It is safe for concurrent use.
type Service struct {
	cgroups    *kernelstats.Reader
	containers Containers
	sandboxes  Sandboxes
	images     Images
	// cpuRates holds the previous CPU reading of each container and pod,
	// keyed by id.
	cpuRates kernelstats.Rates
	// liveRates is how many of cpuRates were live at the last ForgetGone:
	// a reading that takes cpuRates past twice that forgets the gone, so
	// that the readings of removed pods do not accumulate whichever stats
	// calls a client makes.
	liveRates atomic.Int64
}

// ratesSlack is how far past twice the live readings cpuRates may grow
// before a reading forgets the gone ones.
const ratesSlack = 64

// cpuRate records cur as key's CPU reading and returns the rate since the
// previous one.
func (s *Service) cpuRate(key string, cur kernelstats.CPUPoint) (uint64, bool) {
	rate, ok := s.cpuRates.Rate(key, cur)
	if int64(s.cpuRates.Len()) > 2*s.liveRates.Load()+ratesSlack {
		s.ForgetGone()
	}
	return rate, ok
}

// New returns a Service over the given parts; it does no I/O.
func New(cfg Config, containers Containers, sandboxes Sandboxes, images Images) *Service {
	return &Service{
		cgroups:    kernelstats.NewReader(cfg.Cgroups),
		containers: containers,
		sandboxes:  sandboxes,
		images:     images,
	}
}

// ForgetGone drops the CPU readings of containers and pods that no longer
// exist, so that their rates do not accumulate.
func (s *Service) ForgetGone() {
	s.cpuRates.Keep(func(id string) bool {
		if _, err := s.containers.Get(id); err == nil {
			return true
		}
		_, err := s.sandboxes.Get(id)
		return err == nil
	})
	s.liveRates.Store(int64(s.cpuRates.Len()))
}

package checkpoint

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/containerd/errdefs"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/crib-dev/crib/internal/checkpoint/archive"
	"github.com/crib-dev/crib/internal/container"
	"github.com/crib-dev/crib/internal/failpoint"
)

// A pod checkpoint is one directory, PodDir, in the directory the caller
// names (CheckpointPod's output_path, RestorePod's checkpoint_path):
//
//	<output_path>/checkpoint/pod.json                the PodManifest
//	<output_path>/checkpoint/containers/<name>.tar   each container's archive,
//	                                                 as CheckpointContainer writes it
//
// It is written as a hidden directory beside it and renamed into place
// once whole, so that the caller's directory holds either nothing of
// crib's or the whole checkpoint.
const (
	PodDir          = "checkpoint"
	PodManifestFile = "pod.json"
	podContainers   = "containers"
	// podWorkPrefix begins the name of a pod checkpoint's work dir.
	podWorkPrefix = "pod-"
)

// PodManifest is pod.json.
type PodManifest struct {
	// Version is 1.
	Version int `json:"version"`
	// Pod is the checkpointed sandbox's metadata.
	Pod            PodMetadata `json:"pod"`
	RuntimeHandler string      `json:"runtimeHandler,omitempty"`
	CheckpointedAt time.Time   `json:"checkpointedAt"`
	// Containers are the checkpointed containers, by name.
	Containers []PodContainer `json:"containers"`
}

// PodMetadata is a pod's CRI metadata.
type PodMetadata struct {
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
	UID       string `json:"uid"`
	Attempt   uint32 `json:"attempt"`
}

// PodContainer is one container of a pod checkpoint.
type PodContainer struct {
	Name string `json:"name"`
	ID   string `json:"id"`
	// Archive is its archive's path, relative to the PodDir.
	Archive string `json:"archive"`
}

// Pods is what a pod checkpoint and restore need of the pods.
type Pods interface {
	// Pod returns the metadata and runtime handler of a ready pod.
	Pod(id string) (*runtimeapi.PodSandboxMetadata, string, error)
	// Find returns the id of the pod with that metadata, "" for none.
	Find(md *runtimeapi.PodSandboxMetadata) string
	RunPod(ctx context.Context, cfg *runtimeapi.PodSandboxConfig, handler string) (string, error)
	CreateContainer(ctx context.Context, podID string, cfg *runtimeapi.ContainerConfig) (string, error)
	// RemovePod stops and removes a pod and its containers.
	RemovePod(ctx context.Context, id string) error
}

// PodRequest is one pod checkpoint.
type PodRequest struct {
	PodID string
	// Output is the existing, empty directory the checkpoint goes in.
	Output string
	// Containers are the ids of the containers to checkpoint, each with
	// its CRI status as JSON (status.dump).
	Containers map[string][]byte
}

// CheckpointPod checkpoints the running containers req names, all of pod
// req.PodID, into req.Output. Every container is paused before any is
// dumped and all are resumed before it returns: one cut of the pod.
func (s *Service) CheckpointPod(ctx context.Context, req PodRequest) error {
	if err := checkOutput(req.Output); err != nil {
		return err
	}
	md, handler, err := s.pods.Pod(req.PodID)
	if err != nil {
		return err
	}
	if err := s.checkCriu(ctx); err != nil {
		return err
	}
	ids := make([]string, 0, len(req.Containers))
	for id := range req.Containers {
		ids = append(ids, id)
	}
	// One order, so that two checkpoints of a pod take its locks alike.
	sort.Strings(ids)
	var lives []container.Live
	names := map[string]string{}
	var hold func(i int) error
	hold = func(i int) error {
		if i == len(ids) {
			return s.checkpointPod(ctx, req, md, handler, lives)
		}
		return s.containers.WhileRunning(ids[i], func(c container.Live) error {
			if c.Container.SandboxID != req.PodID {
				return fmt.Errorf("container_ids: container %s is not in pod %s: %w", c.Container.ID, req.PodID, errdefs.ErrInvalidArgument)
			}
			if c.Runtime != nil && c.Runtime.Support.CheckpointMissing != "" {
				return fmt.Errorf("container %s: %s: %w", c.Container.ID, c.Runtime.Support.CheckpointMissing, errdefs.ErrFailedPrecondition)
			}
			name := c.Container.Config.GetMetadata().GetName()
			if err := podArchiveName(name); err != nil {
				return fmt.Errorf("container_ids: container %s: %w", c.Container.ID, err)
			}
			if other, dup := names[name]; dup {
				return fmt.Errorf("container_ids: containers %s and %s are both named %q, and a pod checkpoint holds its containers by name: %w", other, c.Container.ID, name, errdefs.ErrInvalidArgument)
			}
			names[name] = c.Container.ID
			lives = append(lives, c)
			return hold(i + 1)
		})
	}
	start := time.Now()
	if err := hold(0); err != nil {
		return fmt.Errorf("checkpoint pod %s: %w", req.PodID, err)
	}
	s.log.Info("pod checkpointed", "pod", req.PodID, "containers", len(ids), "dir", req.Output, "took", time.Since(start))
	return nil
}

// podArchiveName refuses a container name that cannot name its archive
// in the PodDir's containers directory: the CRI only bounds names, so one
// with a slash or a dot-dot would put the archive outside output_path.
func podArchiveName(name string) error {
	if name == "" || name == "." || name == ".." || strings.ContainsRune(name, '/') {
		return fmt.Errorf("name %q cannot name a file in a pod checkpoint: %w", name, errdefs.ErrInvalidArgument)
	}
	return nil
}

// checkOutput refuses an output directory that is not an existing, empty
// directory.
func checkOutput(dir string) error {
	if !filepath.IsAbs(dir) {
		return fmt.Errorf("output_path %q is not an absolute path: %w", dir, errdefs.ErrInvalidArgument)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("output_path %q: %v: %w", dir, err, errdefs.ErrInvalidArgument)
	}
	if len(entries) != 0 {
		return fmt.Errorf("output_path %q is not empty: %w", dir, errdefs.ErrInvalidArgument)
	}
	return nil
}

func (s *Service) checkpointPod(ctx context.Context, req PodRequest, md *runtimeapi.PodSandboxMetadata, handler string, lives []container.Live) (err error) {
	if err := os.MkdirAll(s.cfg.WorkDir, 0o700); err != nil {
		return err
	}
	work, err := os.MkdirTemp(s.cfg.WorkDir, podWorkPrefix)
	if err != nil {
		return err
	}
	temp := filepath.Join(req.Output, "."+PodDir+"."+randomHex()+".tmp")
	in := intent{Temp: temp}
	for _, c := range lives {
		in.Paused = append(in.Paused, c.Container.ID)
	}
	if err := writeFileSync(filepath.Join(work, intentFile), mustJSON(in)); err != nil {
		_ = os.RemoveAll(work)
		return err
	}
	defer func() {
		if err != nil {
			_ = os.RemoveAll(temp)
		}
		_ = os.RemoveAll(work)
	}()
	if err := failpoint.Check("CheckpointPod/intent"); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(temp, podContainers), 0o700); err != nil {
		return err
	}

	// The cut: every container frozen, then each dumped (CRIU leaves a
	// frozen cgroup frozen), then all thawed, whatever happened.
	paused := 0
	defer func() {
		for _, c := range lives[:paused] {
			if rerr := c.Runtime.Resume(context.Background(), c.Container.ID); rerr != nil {
				s.log.Warn("resume a container after its pod's checkpoint", "container", c.Container.ID, "err", rerr)
				if err == nil {
					err = fmt.Errorf("resume container %s: %w", c.Container.ID, rerr)
				}
			}
		}
	}()
	for _, c := range lives {
		if err := c.Runtime.Pause(ctx, c.Container.ID); err != nil {
			return fmt.Errorf("pause container %s: %w", c.Container.ID, err)
		}
		paused++
	}
	if err := failpoint.Check("CheckpointPod/paused"); err != nil {
		return err
	}

	m := PodManifest{
		Version:        1,
		Pod:            PodMetadata{Name: md.GetName(), Namespace: md.GetNamespace(), UID: md.GetUid(), Attempt: md.GetAttempt()},
		RuntimeHandler: handler,
		CheckpointedAt: time.Now(),
	}
	for _, c := range lives {
		name := c.Container.Config.GetMetadata().GetName()
		rel := filepath.Join(podContainers, name+".tar")
		r := Request{ContainerID: c.Container.ID, Location: filepath.Join(temp, rel), Status: req.Containers[c.Container.ID]}
		if err := s.checkpoint(ctx, c, r); err != nil {
			return fmt.Errorf("checkpoint container %s: %w", c.Container.ID, err)
		}
		m.Containers = append(m.Containers, PodContainer{Name: name, ID: c.Container.ID, Archive: filepath.ToSlash(rel)})
	}
	if err := failpoint.Check("CheckpointPod/dumped"); err != nil {
		return err
	}
	if err := s.writeManifest(temp, m); err != nil {
		return err
	}
	if err := failpoint.Check("CheckpointPod/manifest"); err != nil {
		return err
	}
	if err := os.Rename(temp, filepath.Join(req.Output, PodDir)); err != nil {
		return err
	}
	if !s.cfg.SyncArchive {
		return nil
	}
	return syncDir(req.Output)
}

// writeManifest writes pod.json into the pod checkpoint dir, and makes
// it and the containers' archives' names durable when archives are synced.
func (s *Service) writeManifest(dir string, m PodManifest) error {
	path := filepath.Join(dir, PodManifestFile)
	if !s.cfg.SyncArchive {
		return os.WriteFile(path, mustJSON(m), 0o600)
	}
	if err := writeFileSync(path, mustJSON(m)); err != nil {
		return err
	}
	return syncDir(filepath.Join(dir, podContainers))
}

// ReadPodManifest reads the pod checkpoint in dir (RestorePod's
// checkpoint_path).
func ReadPodManifest(dir string) (PodManifest, error) {
	var m PodManifest
	if !filepath.IsAbs(dir) {
		return m, fmt.Errorf("checkpoint_path %q is not an absolute path: %w", dir, errdefs.ErrInvalidArgument)
	}
	data, err := os.ReadFile(filepath.Join(dir, PodDir, PodManifestFile))
	if err != nil {
		return m, fmt.Errorf("checkpoint_path %q: no pod checkpoint: %v: %w", dir, err, errdefs.ErrInvalidArgument)
	}
	if err := json.Unmarshal(data, &m); err != nil {
		return m, fmt.Errorf("checkpoint_path %q: %s: %v: %w", dir, PodManifestFile, err, errdefs.ErrInvalidArgument)
	}
	if m.Version != 1 {
		return m, fmt.Errorf("checkpoint_path %q: %s version %d, want 1: %w", dir, PodManifestFile, m.Version, errdefs.ErrInvalidArgument)
	}
	return m, nil
}

// RestorePodRequest is one pod restore.
type RestorePodRequest struct {
	// Path is the directory CheckpointPod wrote to.
	Path    string
	Config  *runtimeapi.PodSandboxConfig
	Handler string
	// Containers are the configs of every checkpointed container,
	// matched by metadata name.
	Containers []*runtimeapi.ContainerConfig
}

// RestoredContainer is one container RestorePod created.
type RestoredContainer struct{ Name, ID string }

// RestorePod creates a pod from req.Config and in it, from the pod
// checkpoint at req.Path, each container restored (created, not started:
// StartContainer restores its processes). On failure it removes what it
// made; a daemon killed in it leaves a record Recover undoes by.
func (s *Service) RestorePod(ctx context.Context, req RestorePodRequest) (podID string, restored []RestoredContainer, err error) {
	m, err := ReadPodManifest(req.Path)
	if err != nil {
		return "", nil, err
	}
	if m.RuntimeHandler != req.Handler {
		return "", nil, fmt.Errorf("runtime_handler %q: the checkpoint was taken under %q: %w", req.Handler, m.RuntimeHandler, errdefs.ErrFailedPrecondition)
	}
	byName := map[string]PodContainer{}
	for _, c := range m.Containers {
		byName[c.Name] = c
	}
	cfgs := make([]*runtimeapi.ContainerConfig, len(req.Containers))
	for i, cfg := range req.Containers {
		name := cfg.GetMetadata().GetName()
		c, ok := byName[name]
		if !ok {
			return "", nil, fmt.Errorf("container_configs[%d]: container %q is not in the checkpoint (it holds %v): %w", i, name, m.names(), errdefs.ErrInvalidArgument)
		}
		if !filepath.IsLocal(filepath.FromSlash(c.Archive)) {
			return "", nil, fmt.Errorf("checkpoint_path %q: %s: archive %q of container %q is not within the checkpoint: %w", req.Path, PodManifestFile, c.Archive, name, errdefs.ErrInvalidArgument)
		}
		loc := filepath.Join(req.Path, PodDir, filepath.FromSlash(c.Archive))
		if err := checkImage(cfg, loc); err != nil {
			return "", nil, fmt.Errorf("container_configs[%d]: %w", i, err)
		}
		cfg = proto.Clone(cfg).(*runtimeapi.ContainerConfig)
		cfg.Image = &runtimeapi.ImageSpec{Image: loc}
		cfgs[i] = cfg
	}
	if len(req.Containers) != len(m.Containers) {
		return "", nil, fmt.Errorf("container_configs: %d given, the checkpoint holds %d (%v): %w", len(req.Containers), len(m.Containers), m.names(), errdefs.ErrInvalidArgument)
	}
	if id := s.pods.Find(req.Config.GetMetadata()); id != "" {
		return "", nil, fmt.Errorf("config: pod %s has that metadata already: %w", id, errdefs.ErrAlreadyExists)
	}

	if err := os.MkdirAll(s.cfg.WorkDir, 0o700); err != nil {
		return "", nil, err
	}
	work, err := os.MkdirTemp(s.cfg.WorkDir, "restore-")
	if err != nil {
		return "", nil, err
	}
	md := req.Config.GetMetadata()
	in := intent{RestorePod: &PodMetadata{Name: md.GetName(), Namespace: md.GetNamespace(), UID: md.GetUid(), Attempt: md.GetAttempt()}}
	if err := writeFileSync(filepath.Join(work, intentFile), mustJSON(in)); err != nil {
		_ = os.RemoveAll(work)
		return "", nil, err
	}
	defer func() {
		if err != nil && podID != "" {
			if rerr := s.pods.RemovePod(context.WithoutCancel(ctx), podID); rerr != nil {
				// The record stays: the next start removes the pod.
				s.log.Warn("remove a pod whose restore failed", "pod", podID, "err", rerr)
				return
			}
		}
		_ = os.RemoveAll(work)
	}()
	if err := failpoint.Check("RestorePod/intent"); err != nil {
		return "", nil, err
	}
	podID, err = s.pods.RunPod(ctx, req.Config, req.Handler)
	if err != nil {
		return "", nil, err
	}
	if err := failpoint.Check("RestorePod/sandbox"); err != nil {
		return podID, nil, err
	}
	for _, cfg := range cfgs {
		id, err := s.pods.CreateContainer(ctx, podID, cfg)
		if err != nil {
			return podID, nil, fmt.Errorf("restore container %s: %w", cfg.GetMetadata().GetName(), err)
		}
		restored = append(restored, RestoredContainer{Name: cfg.GetMetadata().GetName(), ID: id})
	}
	if err := failpoint.Check("RestorePod/containers"); err != nil {
		return podID, nil, err
	}
	s.log.Info("pod restored", "pod", podID, "containers", len(restored), "from", req.Path)
	return podID, restored, nil
}

func (m PodManifest) names() []string {
	var names []string
	for _, c := range m.Containers {
		names = append(names, c.Name)
	}
	return names
}

// checkImage refuses a config whose image is not the one the archive's
// container stood on (an empty image, or the archive itself, is taken).
func checkImage(cfg *runtimeapi.ContainerConfig, loc string) error {
	want := cfg.GetImage().GetImage()
	if want == "" || want == loc {
		return nil
	}
	dump, err := archive.ReadConfig(loc)
	if err != nil {
		return fmt.Errorf("%w: %w", err, errdefs.ErrInvalidArgument)
	}
	if !slices.Contains([]string{dump.RootfsImage, dump.RootfsImageName, dump.RootfsImageRef}, want) {
		return fmt.Errorf("image %q is not the checkpointed container's %q: %w", want, dump.RootfsImageName, errdefs.ErrInvalidArgument)
	}
	return nil
}

// recoverPod undoes what a pod checkpoint or restore the daemon died in
// left beyond its work dir: thaws the containers it paused, and removes
// the pod it was restoring.
func (s *Service) recoverPod(in intent) {
	ctx := context.Background()
	for _, id := range in.Paused {
		if err := s.containers.Thaw(ctx, id); err != nil {
			s.log.Warn("thaw a container a cut-short pod checkpoint paused", "container", id, "err", err)
		}
	}
	if p := in.RestorePod; p != nil && s.pods != nil {
		md := &runtimeapi.PodSandboxMetadata{Name: p.Name, Namespace: p.Namespace, Uid: p.UID, Attempt: p.Attempt}
		if id := s.pods.Find(md); id != "" {
			if err := s.pods.RemovePod(ctx, id); err != nil {
				s.log.Warn("remove the pod of a cut-short restore", "pod", id, "err", err)
			} else {
				s.log.Info("removed the pod of a cut-short restore", "pod", id)
			}
		}
	}
}

package checkpoint

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/containerd/errdefs"
	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/crib-dev/crib/internal/checkpoint/archive"
	"github.com/crib-dev/crib/internal/container"
	"github.com/crib-dev/crib/internal/failpoint"
	"github.com/crib-dev/crib/internal/ociruntime"
)

// Config configures checkpoints.
type Config struct {
	// Criu is the criu binary ("" runs criu from PATH).
	Criu string
	// NoBreakpoints makes CRIU trace syscalls rather than set hardware
	// breakpoints, which some virtual machines never deliver.
	NoBreakpoints bool
	// SyncArchive makes a checkpoint wait until its archive is on disk
	// before it is renamed into place and the call returns. Without it
	// the rename alone keeps a partial archive from ever being at the
	// location when a process dies; only a host crash within the kernel's
	// writeback window can leave a truncated one, and the archive costs
	// no more than CRIU's own dump (a 100 MiB archive's fsync is a third
	// of a checkpoint's time here).
	SyncArchive bool
	// WorkDir holds one directory per checkpoint under way: CRIU's images
	// and logs, the writable layer's tar, and the intent record.
	WorkDir string
}

// Containers is what a checkpoint needs of the container manager.
type Containers interface {
	WhileRunning(id string, fn func(container.Live) error) error
	// Thaw resumes a container a pod checkpoint left paused.
	Thaw(ctx context.Context, id string) error
}

// Service writes checkpoint archives.
type Service struct {
	cfg        Config
	containers Containers
	pods       Pods
	log        *slog.Logger

	// criuOK is set once criu passed its check: it is not asked again.
	criuMu sync.Mutex
	criuOK bool
}

// New returns a Service; it does no I/O.
func New(cfg Config, containers Containers, pods Pods, log *slog.Logger) *Service {
	return &Service{cfg: cfg, containers: containers, pods: pods, log: log}
}

// Request is one checkpoint.
type Request struct {
	// ContainerID names the container, or a unique prefix of its id.
	ContainerID string
	// Location is the archive's absolute path.
	Location string
	// Status is the container's CRI status as JSON, archived as
	// status.dump (containerd's restore reads it).
	Status []byte
}

// intent is the record, in a checkpoint's work directory, of what a
// daemon killed in it leaves for Recover to undo: the temporary archive
// (or pod checkpoint directory) it may have made beside the location, the
// containers a pod checkpoint paused, the pod a restore was making.
type intent struct {
	Temp       string       `json:"temp"`
	Paused     []string     `json:"paused,omitempty"`
	RestorePod *PodMetadata `json:"restorePod,omitempty"`
}

const intentFile = "intent.json"

// Checkpoint writes the archive of the running container req names to
// req.Location, leaving the container running. Once ctx is done, a dump
// under way is given a short grace, then killed (ociruntime.Checkpoint).
func (s *Service) Checkpoint(ctx context.Context, req Request) error {
	if err := checkLocation(req.Location); err != nil {
		return err
	}
	if err := s.checkCriu(ctx); err != nil {
		return err
	}
	return s.containers.WhileRunning(req.ContainerID, func(c container.Live) error {
		if c.Runtime != nil && c.Runtime.Support.CheckpointMissing != "" {
			return fmt.Errorf("checkpoint container %s: %s: %w", c.Container.ID, c.Runtime.Support.CheckpointMissing, errdefs.ErrFailedPrecondition)
		}
		start := time.Now()
		if err := s.checkpoint(ctx, c, req); err != nil {
			return fmt.Errorf("checkpoint container %s: %w", c.Container.ID, err)
		}
		s.log.Info("container checkpointed", "container", c.Container.ID, "archive", req.Location, "took", time.Since(start))
		return nil
	})
}

// checkLocation refuses a location the archive cannot be written to.
func checkLocation(loc string) error {
	if !filepath.IsAbs(loc) {
		return fmt.Errorf("location %q is not an absolute path: %w", loc, errdefs.ErrInvalidArgument)
	}
	dir := filepath.Dir(loc)
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("location %q: its directory: %v: %w", loc, err, errdefs.ErrInvalidArgument)
	}
	if !fi.IsDir() {
		return fmt.Errorf("location %q: %s is not a directory: %w", loc, dir, errdefs.ErrInvalidArgument)
	}
	if fi, err := os.Stat(loc); err == nil && fi.IsDir() {
		return fmt.Errorf("location %q is a directory: %w", loc, errdefs.ErrInvalidArgument)
	}
	return nil
}

// checkCriu runs `criu check` until it passes once.
func (s *Service) checkCriu(ctx context.Context) error {
	s.criuMu.Lock()
	defer s.criuMu.Unlock()
	if s.criuOK {
		return nil
	}
	bin := s.cfg.Criu
	if bin == "" {
		p, err := exec.LookPath("criu")
		if err != nil {
			return fmt.Errorf("no criu binary in PATH (set [checkpoint] criu_path): %w", errdefs.ErrFailedPrecondition)
		}
		bin = p
	}
	out, err := exec.CommandContext(ctx, bin, "check").CombinedOutput()
	if err != nil && ctx.Err() != nil {
		// Killed by the caller's deadline (a checkpoint's timeout): that
		// says nothing of criu, and the next call checks again.
		return fmt.Errorf("criu %s: `criu check` cut short: %w", bin, ctx.Err())
	}
	if err != nil {
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		return fmt.Errorf("criu %s does not work on this host (`criu check`: %v: %s): %w",
			bin, err, lines[len(lines)-1], errdefs.ErrFailedPrecondition)
	}
	s.criuOK = true
	return nil
}

func (s *Service) checkpoint(ctx context.Context, c container.Live, req Request) (err error) {
	if err := os.MkdirAll(s.cfg.WorkDir, 0o700); err != nil {
		return err
	}
	work, err := os.MkdirTemp(s.cfg.WorkDir, c.Container.ID[:12]+"-")
	if err != nil {
		return err
	}
	temp := filepath.Join(filepath.Dir(req.Location), "."+filepath.Base(req.Location)+"."+randomHex()+".tmp")
	if err := writeFileSync(filepath.Join(work, intentFile), mustJSON(intent{Temp: temp})); err != nil {
		_ = os.RemoveAll(work)
		return err
	}
	// From here on, the work dir and the temp file go on failure.
	defer func() {
		if err != nil {
			_ = os.Remove(temp)
			_ = os.RemoveAll(work)
		}
	}()
	if err := failpoint.Check("CheckpointContainer/intent"); err != nil {
		return err
	}

	images := filepath.Join(work, archive.CheckpointDirectory)
	if err := os.Mkdir(images, 0o700); err != nil {
		return err
	}
	var dumped sync.WaitGroup
	dumped.Add(1)
	// An established connection does not fail the dump: crib restores
	// with tcp-close (container.restoreCriuConfig), so it comes back
	// closed, as a restore into a pod on another IP needs.
	err = c.Runtime.Checkpoint(ctx, c.Container.ID, ociruntime.CheckpointOpts{
		ImagePath: images, WorkPath: work, LeaveRunning: true, TCPEstablished: true,
		Criu: s.cfg.Criu, NoBreakpoints: s.cfg.NoBreakpoints,
	}, dumped.Done)
	// The runtime has exited: cancelled, it was given its grace, then
	// killed.
	dumped.Wait()
	if err != nil {
		if log, rerr := os.ReadFile(filepath.Join(work, archive.DumpLogFile)); rerr == nil {
			s.log.Warn("CRIU dump failed", "container", c.Container.ID, "errors", criuErrors(string(log)), "log_tail", tail(string(log), 10))
		}
		return err
	}
	if err := failpoint.Check("CheckpointContainer/dumped"); err != nil {
		return err
	}

	spec, err := os.ReadFile(c.Spec)
	if err != nil {
		return fmt.Errorf("read the container's spec: %w", err)
	}
	if err := writeDiff(ctx, work, c, spec); err != nil {
		return err
	}
	if err := failpoint.Check("CheckpointContainer/rootfs"); err != nil {
		return err
	}

	if err := writeArchive(ctx, temp, work, c, req, spec, s.cfg.SyncArchive); err != nil {
		return err
	}
	if err := failpoint.Check("CheckpointContainer/archive"); err != nil {
		return err
	}
	if err := os.Rename(temp, req.Location); err != nil {
		return err
	}
	if s.cfg.SyncArchive {
		if err := syncDir(filepath.Dir(req.Location)); err != nil {
			s.log.Warn("sync the checkpoint's directory", "dir", filepath.Dir(req.Location), "err", err)
		}
	}
	if err := os.RemoveAll(work); err != nil {
		s.log.Warn("remove a checkpoint's work dir", "dir", work, "err", err)
	}
	return nil
}

// writeDiff writes rootfs-diff.tar and, when the container deleted any
// of the image's files, deleted.files into work.
func writeDiff(ctx context.Context, work string, c container.Live, specJSON []byte) error {
	var spec specs.Spec
	if err := json.Unmarshal(specJSON, &spec); err != nil {
		return fmt.Errorf("decode the container's spec: %w", err)
	}
	skip := map[string]bool{}
	for _, m := range spec.Mounts {
		skip[filepath.Clean(m.Destination)] = true
	}
	f, err := os.Create(filepath.Join(work, archive.RootFsDiffTar))
	if err != nil {
		return err
	}
	deleted, err := writeRootfsDiff(ctx, f, c.WritableLayer, c.LowerDirs, skip)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if len(deleted) == 0 {
		return nil
	}
	return os.WriteFile(filepath.Join(work, archive.DeletedFilesFile), mustJSON(deleted), 0o600)
}

// writeArchive writes the archive to temp, and syncs it if asked.
func writeArchive(ctx context.Context, temp, work string, c container.Live, req Request, spec []byte, durable bool) (err error) {
	f, err := os.OpenFile(temp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("create the archive: %w", err)
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}()
	ctr := c.Container
	now := time.Now()
	tw := tarFile{f}
	add := func(name string, data []byte) error {
		hdr := &tar.Header{Name: name, Mode: 0o600, Size: int64(len(data)), ModTime: now, Typeflag: tar.TypeReg}
		return tw.member(hdr, bytes.NewReader(data))
	}
	cfg := archive.ContainerConfig{
		ID:              ctr.ID,
		Name:            ctr.Config.GetMetadata().GetName(),
		RootfsImage:     ctr.Config.GetImage().GetUserSpecifiedImage(),
		RootfsImageRef:  ctr.ImageRef,
		RootfsImageName: ctr.Config.GetImage().GetImage(),
		OCIRuntime:      filepath.Base(c.Runtime.Binary),
		CreatedTime:     ctr.CreatedAt,
		CheckpointedAt:  now,
	}
	if cfg.RootfsImage == "" {
		cfg.RootfsImage = cfg.RootfsImageName
	}
	status := archive.ContainerdStatus{
		CreatedAt: ctr.CreatedAt.UnixNano(),
		StartedAt: ctr.StartedAt.UnixNano(),
		Pid:       uint32(ctr.Pid),
	}
	for _, part := range []struct {
		name string
		data []byte
	}{
		{archive.ConfigDumpFile, mustJSON(cfg)},
		{archive.SpecDumpFile, spec},
		{archive.StatusDumpFile, req.Status},
		{archive.StatusFile, mustJSON(status)},
	} {
		if err := add(part.name, part.data); err != nil {
			return fmt.Errorf("write the archive: %w", err)
		}
	}
	// What is in the work dir: CRIU's images and logs, the diff.
	err = filepath.WalkDir(work, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		rel, _ := filepath.Rel(work, p)
		if rel == "." || rel == intentFile {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		return copyFile(tw, p, filepath.ToSlash(rel), fi)
	})
	if err != nil {
		return fmt.Errorf("write the archive: %w", err)
	}
	if ctr.LogPath != "" {
		if fi, err := os.Stat(ctr.LogPath); err == nil && fi.Mode().IsRegular() {
			if err := copyFile(tw, ctr.LogPath, archive.ContainerLogFile, fi); err != nil {
				return fmt.Errorf("write the archive: the container's log: %w", err)
			}
		}
	}
	if err := tw.close(); err != nil {
		return fmt.Errorf("write the archive: %w", err)
	}
	if !durable {
		return nil
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("sync the archive: %w", err)
	}
	return nil
}

// copyFile writes the file or directory p to tw as name.
func copyFile(tw tarFile, p, name string, fi fs.FileInfo) error {
	hdr, err := tar.FileInfoHeader(fi, "")
	if err != nil {
		return err
	}
	hdr.Name, hdr.Uname, hdr.Gname = name, "", ""
	if fi.IsDir() {
		hdr.Name += "/"
		return tw.header(hdr)
	}
	if !fi.Mode().IsRegular() {
		return nil
	}
	src, err := os.Open(p)
	if err != nil {
		return err
	}
	defer src.Close()
	// A log grows while it is copied: the header's size is what goes in.
	if err := tw.member(hdr, src); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

// Recover removes what checkpoints cut short by the daemon's death left:
// their work dirs and temporary archives. It lists them at once, before
// any new checkpoint starts, and removes at once those no process writes
// to; one a runtime still dumps into is removed in the background once the
// runtime has exited (or, after wait, been killed), so that it writes
// nothing after the removal. done is closed once all are gone.
func (s *Service) Recover(wait time.Duration) (done <-chan struct{}) {
	finished := make(chan struct{})
	entries, err := os.ReadDir(s.cfg.WorkDir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		s.log.Warn("list checkpoint work dirs", "err", err)
	}
	var busy, pods []string
	for _, e := range entries {
		work := filepath.Join(s.cfg.WorkDir, e.Name())
		switch {
		case len(namedInCmdline(work)) > 0:
			busy = append(busy, work)
		case strings.HasPrefix(e.Name(), podWorkPrefix):
			// Its containers are thawed once no CRIU dumps them: CRIU
			// puts a cgroup back as it found it.
			pods = append(pods, work)
		default:
			s.removeWork(work, 0)
		}
	}
	if len(busy) == 0 {
		for _, work := range pods {
			s.removeWork(work, 0)
		}
		pods = nil
	}
	go func() {
		defer close(finished)
		for _, work := range busy {
			s.removeWork(work, wait)
		}
		for _, work := range pods {
			s.removeWork(work, 0)
		}
	}()
	return finished
}

// removeWork removes a cut-short checkpoint's work dir and temporary
// archive.
func (s *Service) removeWork(work string, wait time.Duration) {
	waitForWriters(work, wait)
	var in intent
	if data, err := os.ReadFile(filepath.Join(work, intentFile)); err == nil && json.Unmarshal(data, &in) == nil {
		if in.Temp != "" {
			if err := os.RemoveAll(in.Temp); err != nil {
				s.log.Warn("remove a cut-short checkpoint's archive", "file", in.Temp, "err", err)
			}
		}
		s.recoverPod(in)
	}
	if err := os.RemoveAll(work); err != nil {
		s.log.Warn("remove a cut-short checkpoint's work dir", "dir", work, "err", err)
		return
	}
	s.log.Info("removed a cut-short checkpoint", "dir", work)
}

// waitForWriters waits, up to wait, until no process names dir in its
// command line (runc checkpoint is given its image and work paths).
// Then it kills their process groups (the runtime's, which its CRIU
// joined).
func waitForWriters(dir string, wait time.Duration) {
	deadline := time.Now().Add(wait)
	for time.Now().Before(deadline) && len(namedInCmdline(dir)) > 0 {
		time.Sleep(100 * time.Millisecond)
	}
	for _, pid := range namedInCmdline(dir) {
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// namedInCmdline lists the processes whose command line names dir.
func namedInCmdline(dir string) []int {
	var pids []int
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		if data, err := os.ReadFile(p); err == nil && strings.Contains(string(data), dir) {
			if pid, err := strconv.Atoi(filepath.Base(filepath.Dir(p))); err == nil {
				pids = append(pids, pid)
			}
		}
	}
	return pids
}

func writeFileSync(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return syncDir(filepath.Dir(path))
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

func mustJSON(v any) []byte {
	data, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("checkpoint: encode %T: %v", v, err)) // only plain structs are encoded
	}
	return data
}

func randomHex() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// criuErrors is CRIU's log's error lines, which say why a dump failed
// (its tail says only that it did).
func criuErrors(log string) string {
	var errs []string
	for _, l := range strings.Split(log, "\n") {
		if strings.Contains(l, "Error (") {
			errs = append(errs, l)
		}
	}
	return tail(strings.Join(errs, "\n"), 10)
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

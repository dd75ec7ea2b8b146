package daemon

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/crib-dev/crib/internal/config"
	"github.com/crib-dev/crib/internal/image"
	"github.com/crib-dev/crib/internal/metastore"
	"github.com/crib-dev/crib/internal/sigpolicy"
	"github.com/crib-dev/crib/internal/snapshot"
)

// openStores opens the metadata store and the image store (d.images) in
// crib's directories.
func (d *Daemon) openStores(ctx context.Context) (*metastore.DB, error) {
	db, err := metastore.Open(filepath.Join(d.cfg.Root, "metadata.db"))
	if err != nil {
		return nil, err
	}
	d.opened.add("metadata store", db.Close)
	images, err := image.Open(ctx, image.Config{
		Root:                filepath.Join(d.cfg.Root, "images"),
		Registries:          registries(d.cfg.Registries),
		LayerLimits:         LayerLimits(d.cfg),
		PullProgressTimeout: d.cfg.ImagePullProgressTimeout,
		Pulls:               pullWatch{PullRecorder: d.metrics, ended: d.pullsEnded},
		SignaturePolicy:     signaturePolicy(d.cfg.SignaturePolicy),
	})
	if err != nil {
		return nil, err
	}
	d.opened.add("image store", images.Close)
	d.images = images
	for _, ref := range d.cfg.PinnedImages {
		if err := images.SetPinned(ref, true); err != nil {
			d.log.Warn("pinned image is not in the store", "image", ref, "err", err)
		}
	}
	return db, nil
}

// prepareRoots makes crib's directories and checks that they are writable.
// Others may search them (0711), as the root of a pod in its own user
// namespace, an unprivileged user on the host, must reach its rootfs and
// pod files through them; a directory an earlier tool made 0700 is opened
// up that far.
func (d *Daemon) prepareRoots() error {
	for _, dir := range []string{d.cfg.Root, d.cfg.State} {
		if err := os.MkdirAll(dir, 0o711); err != nil {
			return fmt.Errorf("root %s is unusable: %w", dir, err)
		}
		if fi, err := os.Stat(dir); err == nil && fi.Mode().Perm()&0o011 != 0o011 {
			if err := os.Chmod(dir, fi.Mode().Perm()|0o011); err != nil {
				return fmt.Errorf("root %s is unusable: %w", dir, err)
			}
			d.log.Info("made crib's directory searchable by others, for the roots of pods in user namespaces", "dir", dir)
		}
		probe, err := os.CreateTemp(dir, ".probe-*")
		if err != nil {
			return fmt.Errorf("root %s is unusable: %w", dir, err)
		}
		probe.Close()
		os.Remove(probe.Name())
	}
	return nil
}

// LayerLimits are the bounds of cfg on what one image layer may unpack
// to; `crib image load` without a daemon applies them too.
func LayerLimits(cfg config.Config) snapshot.Limits {
	return snapshot.Limits{
		MaxSize:          cfg.MaxLayerSize,
		ExpansionRatio:   cfg.LayerLimits.ExpansionRatio,
		ExpansionFloor:   cfg.LayerLimits.ExpansionFloor,
		FreeSpaceReserve: cfg.LayerLimits.FreeSpaceReserve,
		MaxEntries:       cfg.LayerLimits.MaxEntries,
	}
}

func registries(in map[string]config.Registry) map[string]image.Registry {
	out := make(map[string]image.Registry, len(in))
	for host, r := range in {
		out[host] = image.Registry{Mirrors: r.Mirrors, Insecure: r.Insecure}
	}
	return out
}

// VerifyConfig is the part of the image store's configuration that
// deciding on a pull's signatures reads (image.Verify): registries, the
// pull progress timeout and the signature policy.
func VerifyConfig(cfg config.Config) image.Config {
	return image.Config{
		Registries:          registries(cfg.Registries),
		PullProgressTimeout: cfg.ImagePullProgressTimeout,
		SignaturePolicy:     signaturePolicy(cfg.SignaturePolicy),
	}
}

func signaturePolicy(c config.SignaturePolicy) sigpolicy.Config {
	return sigpolicy.Config{Path: c.Path, NamespacedDir: c.NamespacedDir}
}

// pullWatch passes pulls on to the metrics and tells the reclaimer when
// one ended: a pull's buffers are worth handing back.
type pullWatch struct {
	image.PullRecorder
	ended chan<- struct{}
}

func (w pullWatch) PullFinished(d time.Duration, reason string) {
	w.PullRecorder.PullFinished(d, reason)
	select {
	case w.ended <- struct{}{}:
	default: // one is due already
	}
}

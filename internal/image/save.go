package image

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/containerd/errdefs"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/partial"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/opencontainers/go-digest"
	imagespec "github.com/opencontainers/image-spec/specs-go/v1"
)

// Save formats.
const (
	FormatOCI    = "oci"    // an OCI image layout, tarred
	FormatDocker = "docker" // a docker-archive (docker save) tarball
)

// Save writes the image ref names to w as a tarball in format (FormatOCI
// or FormatDocker), named by all its tags. Load reads either back.
func (s *Store) Save(ctx context.Context, ref, format string, w io.Writer) error {
	if format != FormatOCI && format != FormatDocker {
		return fmt.Errorf("save image: format %q is neither oci nor docker: %w", format, errdefs.ErrInvalidArgument)
	}
	img, err := s.Resolve(ref)
	if err != nil {
		return fmt.Errorf("save image: %w", err)
	}
	// Hold the blobs while writing them out.
	s.mu.RLock()
	rec := s.images[img.ID]
	s.mu.RUnlock()
	if rec == nil {
		return fmt.Errorf("save image %s: %w", img.ID, errdefs.ErrNotFound)
	}
	s.retain(nil, rec.Blobs)
	defer func() {
		s.refMu.Lock()
		release(s.retainedBlobs, rec.Blobs)
		s.refMu.Unlock()
	}()
	v1img, err := s.v1Image(ctx, rec)
	if err != nil {
		return fmt.Errorf("save image %s: %w", img.ID, err)
	}
	if format == FormatDocker {
		return s.saveDocker(img, v1img, w)
	}
	return s.saveOCI(ctx, img, v1img, w)
}

func (s *Store) saveDocker(img Image, v1img v1.Image, w io.Writer) error {
	if len(img.RepoTags) == 0 {
		return fmt.Errorf("save image %s: a docker archive needs a tag and the image has none: %w", img.ID, errdefs.ErrFailedPrecondition)
	}
	refs := map[name.Reference]v1.Image{}
	for _, t := range img.RepoTags {
		tag, err := name.NewTag(t)
		if err != nil {
			return fmt.Errorf("save image %s: tag %q: %w", img.ID, t, err)
		}
		refs[tag] = v1img
	}
	if err := tarball.MultiRefWrite(refs, w); err != nil {
		return fmt.Errorf("save image %s: %w", img.ID, err)
	}
	return nil
}

func (s *Store) saveOCI(ctx context.Context, img Image, v1img v1.Image, w io.Writer) error {
	dir, err := os.MkdirTemp(s.tmpDir, "save-")
	if err != nil {
		return fmt.Errorf("save image %s: %w", img.ID, err)
	}
	defer os.RemoveAll(dir)
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return fmt.Errorf("save image %s: %w", img.ID, err)
	}
	names := img.RepoTags
	if len(names) == 0 {
		names = []string{""}
	}
	for _, n := range names {
		var opts []layout.Option
		if n != "" {
			opts = append(opts, layout.WithAnnotations(map[string]string{
				imagespec.AnnotationRefName: n,
				annotationContainerdName:    n,
			}))
		}
		if err := p.AppendImage(v1img, opts...); err != nil {
			return fmt.Errorf("save image %s: %w", img.ID, err)
		}
	}
	if err := writeTarDir(ctx, dir, w); err != nil {
		return fmt.Errorf("save image %s: %w", img.ID, err)
	}
	return nil
}

// writeTarDir writes the regular files and directories under dir to w.
func writeTarDir(ctx context.Context, dir string, w io.Writer) error {
	tw := tar.NewWriter(w)
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil || rel == "." {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		hdr, err := tar.FileInfoHeader(info, "")
		if err != nil {
			return err
		}
		hdr.Name = filepath.ToSlash(rel)
		if d.IsDir() {
			hdr.Name += "/"
		}
		hdr.Uid, hdr.Gid, hdr.Uname, hdr.Gname = 0, 0, "", ""
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if !info.Mode().IsRegular() {
			return nil
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = io.Copy(tw, f)
		return err
	})
	if err != nil {
		return err
	}
	return tw.Close()
}

// v1Image presents a stored image to go-containerregistry's writers.
func (s *Store) v1Image(ctx context.Context, rec *record) (v1.Image, error) {
	raw, m, err := s.findManifest(rec)
	if err != nil {
		return nil, err
	}
	cfg, err := s.content.ReadAll(digest.Digest(rec.ID))
	if err != nil {
		return nil, fmt.Errorf("read image config: %w", err)
	}
	return partial.CompressedToImage(&storedImage{s: s, ctx: ctx, manifest: raw, parsed: m, config: cfg})
}

// findManifest finds, among the image's blobs, the manifest of its config.
func (s *Store) findManifest(rec *record) ([]byte, imagespec.Manifest, error) {
	for _, b := range rec.Blobs {
		d, err := digest.Parse(b)
		if err != nil || b == rec.ID {
			continue
		}
		info, err := s.content.Stat(d)
		if err != nil || info.Size > maxSmallBlob {
			continue
		}
		raw, err := s.content.ReadAll(d)
		if err != nil {
			continue
		}
		var m imagespec.Manifest
		if json.Unmarshal(raw, &m) != nil || m.Config.Digest.String() != rec.ID || len(m.Layers) != len(rec.ChainIDs) {
			continue
		}
		return raw, m, nil
	}
	return nil, imagespec.Manifest{}, fmt.Errorf("no manifest stored for image %s (loaded before crib kept one? load or pull it again): %w", rec.ID, errdefs.ErrNotFound)
}

// synthManifest makes an OCI manifest for an image that came without one.
func synthManifest(spec importSpec) ([]byte, error) {
	m := imagespec.Manifest{
		MediaType: imagespec.MediaTypeImageManifest,
		Config: imagespec.Descriptor{
			MediaType: imagespec.MediaTypeImageConfig,
			Digest:    spec.configDigest,
			Size:      int64(len(spec.config)),
		},
	}
	m.SchemaVersion = 2
	for _, l := range spec.layers {
		m.Layers = append(m.Layers, l.desc)
	}
	b, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("encode manifest: %w", err)
	}
	return b, nil
}

// storedImage is a partial.CompressedImageCore over the store's blobs.
type storedImage struct {
	s        *Store
	ctx      context.Context
	manifest []byte
	parsed   imagespec.Manifest
	config   []byte
}

func (i *storedImage) RawConfigFile() ([]byte, error) { return i.config, nil }
func (i *storedImage) RawManifest() ([]byte, error)   { return i.manifest, nil }

func (i *storedImage) MediaType() (types.MediaType, error) {
	if i.parsed.MediaType != "" {
		return types.MediaType(i.parsed.MediaType), nil
	}
	return types.OCIManifestSchema1, nil
}

func (i *storedImage) LayerByDigest(h v1.Hash) (partial.CompressedLayer, error) {
	for _, l := range i.parsed.Layers {
		if l.Digest.String() == h.String() {
			return &storedLayer{img: i, desc: l}, nil
		}
	}
	if h.String() == i.parsed.Config.Digest.String() {
		return &storedLayer{img: i, desc: i.parsed.Config, raw: i.config}, nil
	}
	return nil, fmt.Errorf("layer %s: %w", h, errdefs.ErrNotFound)
}

// storedLayer is one blob of a storedImage.
type storedLayer struct {
	img  *storedImage
	desc imagespec.Descriptor
	raw  []byte // set for the config blob
}

func (l *storedLayer) Digest() (v1.Hash, error) { return v1.NewHash(l.desc.Digest.String()) }
func (l *storedLayer) Size() (int64, error)     { return l.desc.Size, nil }

func (l *storedLayer) MediaType() (types.MediaType, error) {
	return types.MediaType(l.desc.MediaType), nil
}

func (l *storedLayer) Compressed() (io.ReadCloser, error) {
	if l.raw != nil {
		return io.NopCloser(bytes.NewReader(l.raw)), nil
	}
	if err := l.img.ctx.Err(); err != nil {
		return nil, err
	}
	return l.img.s.content.Open(l.desc.Digest)
}

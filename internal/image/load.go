package image

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/containerd/errdefs"
	securejoin "github.com/cyphar/filepath-securejoin"
	"github.com/klauspost/compress/gzip"
	"github.com/opencontainers/go-digest"
	imagespec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/crib-dev/crib/internal/content"
)

const (
	annotationContainerdName = "io.containerd.image.name"
	maxSmallBlob             = 8 << 20 // manifests, indexes, configs
	maxIndexDepth            = 4
)

// Load stores the images of an OCI image-layout tarball or a docker-archive
// (docker save) tarball, optionally gzip-compressed; the format is detected
// from the archive's contents (manifest.json means docker-archive, which
// also covers newer docker save output that carries both). Names come from
// the docker RepoTags or from the OCI index annotations
// (io.containerd.image.name, else a full org.opencontainers.image.ref.name).
// A multi-arch index is resolved to the store's platform.
func (s *Store) Load(ctx context.Context, r io.Reader) ([]Image, error) {
	dir, err := os.MkdirTemp(s.tmpDir, "load-")
	if err != nil {
		return nil, fmt.Errorf("load images: %w", err)
	}
	defer os.RemoveAll(dir)
	if err := unpackArchive(ctx, dir, r); err != nil {
		return nil, fmt.Errorf("load images: %w", err)
	}
	a := archive{dir: dir}
	var imgs []Image
	switch {
	case a.exists("manifest.json"):
		imgs, err = s.loadDockerArchive(ctx, a)
	case a.exists("index.json"):
		imgs, err = s.loadOCILayout(ctx, a)
	default:
		err = fmt.Errorf("neither manifest.json nor index.json found: %w", errdefs.ErrInvalidArgument)
	}
	if err != nil {
		return nil, fmt.Errorf("load images: %w", err)
	}
	return imgs, nil
}

// unpackArchive writes the regular files, directories and symlinks of the
// tarball under dir. Names must stay inside dir; symlinks are kept as they
// are and only ever followed through archive.open, which resolves them
// inside dir.
func unpackArchive(ctx context.Context, dir string, r io.Reader) error {
	br := bufio.NewReader(r)
	var src io.Reader = br
	if head, _ := br.Peek(2); bytes.Equal(head, []byte{0x1f, 0x8b}) {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return fmt.Errorf("open gzip archive: %v: %w", err, errdefs.ErrInvalidArgument)
		}
		defer zr.Close()
		src = zr
	}
	tr := tar.NewReader(src)
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read archive: %v: %w", err, errdefs.ErrInvalidArgument)
		}
		clean := path.Clean(strings.TrimPrefix(hdr.Name, "/"))
		if clean == "." {
			continue
		}
		if clean == ".." || strings.HasPrefix(clean, "../") {
			return fmt.Errorf("archive entry %q escapes the archive: %w", hdr.Name, errdefs.ErrInvalidArgument)
		}
		parent, err := securejoin.SecureJoin(dir, path.Dir(clean))
		if err != nil {
			return fmt.Errorf("resolve archive entry %q: %w", hdr.Name, err)
		}
		target := filepath.Join(parent, path.Base(clean))
		if err := os.MkdirAll(parent, 0o700); err != nil {
			return fmt.Errorf("create dir for %q: %w", hdr.Name, err)
		}
		switch hdr.Typeflag {
		case tar.TypeDir:
			err = os.MkdirAll(target, 0o700)
		case tar.TypeReg: // archive/tar reports the old TypeRegA as TypeReg
			err = writeArchiveFile(target, tr)
		case tar.TypeSymlink:
			os.Remove(target)
			err = os.Symlink(hdr.Linkname, target)
		}
		if err != nil {
			return fmt.Errorf("extract archive entry %q: %w", hdr.Name, err)
		}
	}
}

func writeArchiveFile(target string, r io.Reader) error {
	os.Remove(target)
	f, err := os.OpenFile(target, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, r); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// archive is an unpacked image tarball.
type archive struct{ dir string }

func (a archive) open(rel string) (*os.File, error) {
	p, err := securejoin.SecureJoin(a.dir, rel)
	if err != nil {
		return nil, fmt.Errorf("resolve %q: %w", rel, err)
	}
	f, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("archive has no %q: %w", rel, errdefs.ErrInvalidArgument)
	}
	return f, err
}

func (a archive) exists(rel string) bool {
	f, err := a.open(rel)
	if err != nil {
		return false
	}
	f.Close()
	return true
}

func (a archive) readSmall(rel string) ([]byte, error) {
	f, err := a.open(rel)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxSmallBlob+1))
	if err != nil {
		return nil, fmt.Errorf("read %q: %w", rel, err)
	}
	if len(b) > maxSmallBlob {
		return nil, fmt.Errorf("%q is larger than %d bytes: %w", rel, maxSmallBlob, errdefs.ErrInvalidArgument)
	}
	return b, nil
}

func (a archive) opener(rel string) func(context.Context) (io.ReadCloser, error) {
	return func(context.Context) (io.ReadCloser, error) { return a.open(rel) }
}

func blobPath(d digest.Digest) (string, error) {
	if err := d.Validate(); err != nil {
		return "", fmt.Errorf("digest %q: %v: %w", d, err, errdefs.ErrInvalidArgument)
	}
	return path.Join("blobs", d.Algorithm().String(), d.Encoded()), nil
}

// readBlob reads a small OCI layout blob and checks its digest.
func (a archive) readBlob(d digest.Digest) ([]byte, error) {
	p, err := blobPath(d)
	if err != nil {
		return nil, err
	}
	b, err := a.readSmall(p)
	if err != nil {
		return nil, err
	}
	if got := d.Algorithm().FromBytes(b); got != d {
		return nil, fmt.Errorf("blob digest mismatch: expected %s, got %s: %w", d, got, errdefs.ErrInvalidArgument)
	}
	return b, nil
}

func (s *Store) loadOCILayout(ctx context.Context, a archive) ([]Image, error) {
	raw, err := a.readSmall("index.json")
	if err != nil {
		return nil, err
	}
	var idx imagespec.Index
	if err := json.Unmarshal(raw, &idx); err != nil {
		return nil, fmt.Errorf("decode index.json: %v: %w", err, errdefs.ErrInvalidArgument)
	}
	var out []Image
	for _, d := range idx.Manifests {
		spec := importSpec{smallBlobs: map[digest.Digest][]byte{}}
		if err := s.ociManifest(a, d, &spec, 0); err != nil {
			return nil, err
		}
		if n := annotatedName(d.Annotations); n != "" {
			spec.names = append(spec.names, n)
		}
		img, err := s.commit(ctx, spec)
		if err != nil {
			return nil, err
		}
		out = append(out, img)
	}
	return out, nil
}

// annotatedName returns the normalized image name an OCI index entry
// carries, or "" when it carries none (a bare tag such as "latest" does
// not name a repository, so it is ignored).
func annotatedName(a map[string]string) string {
	for _, key := range []string{annotationContainerdName, imagespec.AnnotationRefName} {
		v := a[key]
		if v == "" || !strings.ContainsAny(v, "/:@") {
			continue
		}
		if n, err := Normalize(v); err == nil {
			return n
		}
	}
	return ""
}

// ociManifest fills spec from the manifest (or the platform's manifest of
// the index) that d describes.
func (s *Store) ociManifest(a archive, d imagespec.Descriptor, spec *importSpec, depth int) error {
	if depth > maxIndexDepth {
		return fmt.Errorf("index nesting deeper than %d: %w", maxIndexDepth, errdefs.ErrInvalidArgument)
	}
	raw, err := a.readBlob(d.Digest)
	if err != nil {
		return err
	}
	spec.smallBlobs[d.Digest] = raw
	var probe struct {
		MediaType string                 `json:"mediaType"`
		Manifests []imagespec.Descriptor `json:"manifests"`
		Config    *imagespec.Descriptor  `json:"config"`
	}
	if err := json.Unmarshal(raw, &probe); err != nil {
		return fmt.Errorf("decode manifest %s: %v: %w", d.Digest, err, errdefs.ErrInvalidArgument)
	}
	if probe.Config == nil {
		child, err := s.pickPlatform(probe.Manifests)
		if err != nil {
			return fmt.Errorf("index %s: %w", d.Digest, err)
		}
		return s.ociManifest(a, child, spec, depth+1)
	}
	var m imagespec.Manifest
	if err := json.Unmarshal(raw, &m); err != nil {
		return fmt.Errorf("decode manifest %s: %v: %w", d.Digest, err, errdefs.ErrInvalidArgument)
	}
	spec.configDigest = m.Config.Digest
	if spec.config, err = a.readBlob(m.Config.Digest); err != nil {
		return err
	}
	for _, l := range m.Layers {
		p, err := blobPath(l.Digest)
		if err != nil {
			return err
		}
		spec.layers = append(spec.layers, layerSource{desc: l, open: a.opener(p)})
	}
	return nil
}

// pickPlatform chooses the index entry for the store's platform. An entry
// without a platform is taken only when it is the sole entry.
func (s *Store) pickPlatform(ds []imagespec.Descriptor) (imagespec.Descriptor, error) {
	for _, d := range ds {
		p := d.Platform
		if p == nil {
			continue
		}
		if p.OS == s.platform.OS && p.Architecture == s.platform.Architecture &&
			(s.platform.Variant == "" || p.Variant == s.platform.Variant) {
			return d, nil
		}
	}
	if len(ds) == 1 && ds[0].Platform == nil {
		return ds[0], nil
	}
	return imagespec.Descriptor{}, fmt.Errorf("no image for platform %s/%s: %w", s.platform.OS, s.platform.Architecture, errdefs.ErrNotFound)
}

// dockerManifest is one entry of a docker-archive manifest.json.
type dockerManifest struct {
	Config   string
	RepoTags []string
	Layers   []string
}

func (s *Store) loadDockerArchive(ctx context.Context, a archive) ([]Image, error) {
	raw, err := a.readSmall("manifest.json")
	if err != nil {
		return nil, err
	}
	var ms []dockerManifest
	if err := json.Unmarshal(raw, &ms); err != nil {
		return nil, fmt.Errorf("decode manifest.json: %v: %w", err, errdefs.ErrInvalidArgument)
	}
	var out []Image
	for _, m := range ms {
		spec := importSpec{smallBlobs: map[digest.Digest][]byte{}}
		if spec.config, err = a.readSmall(m.Config); err != nil {
			return nil, err
		}
		spec.configDigest = digest.FromBytes(spec.config)
		for _, rel := range m.Layers {
			desc, err := a.describe(ctx, rel)
			if err != nil {
				return nil, err
			}
			spec.layers = append(spec.layers, layerSource{desc: desc, open: a.opener(rel)})
		}
		// A docker archive has no manifest; keep one made from what it
		// has so that Save can write the image out again.
		man, err := synthManifest(spec)
		if err != nil {
			return nil, err
		}
		spec.smallBlobs[digest.FromBytes(man)] = man
		for _, t := range m.RepoTags {
			n, err := Normalize(t)
			if err != nil {
				return nil, fmt.Errorf("repo tag %q: %w", t, err)
			}
			spec.names = append(spec.names, n)
		}
		img, err := s.commit(ctx, spec)
		if err != nil {
			return nil, err
		}
		out = append(out, img)
	}
	return out, nil
}

// describe hashes a docker-archive layer file, which is named by path
// rather than digest, and sniffs its compression for the media type.
func (a archive) describe(ctx context.Context, rel string) (imagespec.Descriptor, error) {
	f, err := a.open(rel)
	if err != nil {
		return imagespec.Descriptor{}, err
	}
	defer f.Close()
	head := make([]byte, 2)
	n, _ := io.ReadFull(f, head)
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return imagespec.Descriptor{}, fmt.Errorf("read layer %q: %w", rel, err)
	}
	mediaType := imagespec.MediaTypeImageLayer
	if n == 2 && bytes.Equal(head, []byte{0x1f, 0x8b}) {
		mediaType = imagespec.MediaTypeImageLayerGzip
	}
	dg := digest.SHA256.Digester()
	size, err := io.Copy(dg.Hash(), content.ContextReader(ctx, f))
	if err != nil {
		return imagespec.Descriptor{}, fmt.Errorf("hash layer %q: %w", rel, err)
	}
	return imagespec.Descriptor{MediaType: mediaType, Digest: dg.Digest(), Size: size}, nil
}

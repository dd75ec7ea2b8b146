package image

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/containerd/errdefs"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/opencontainers/go-digest"
	imagespec "github.com/opencontainers/image-spec/specs-go/v1"
)

// FuzzOCIManifest decodes arbitrary bytes as the manifest or index an OCI
// layout's index.json points at, beside a valid config and manifest it may
// refer to. The decoder must never panic; it fails as InvalidArgument or
// NotFound; what it accepts names a config whose bytes match its digest
// and layers with valid digests.
func FuzzOCIManifest(f *testing.F) {
	config := []byte(`{"architecture":"amd64","os":"linux","rootfs":{"type":"layers","diff_ids":["sha256:` + sha("layer") + `"]},"config":{"Cmd":["sh"]}}`)
	configDesc := imagespec.Descriptor{MediaType: imagespec.MediaTypeImageConfig, Digest: digest.FromBytes(config), Size: int64(len(config))}
	manifest := mustJSON(f, imagespec.Manifest{
		MediaType: imagespec.MediaTypeImageManifest, Config: configDesc,
		Layers: []imagespec.Descriptor{{MediaType: imagespec.MediaTypeImageLayerGzip, Digest: digest.FromString("layer"), Size: 5}},
	})
	manifestDesc := imagespec.Descriptor{MediaType: imagespec.MediaTypeImageManifest, Digest: digest.FromBytes(manifest), Size: int64(len(manifest))}
	amd64 := manifestDesc
	amd64.Platform = &imagespec.Platform{OS: "linux", Architecture: "amd64"}
	arm64 := manifestDesc
	arm64.Platform = &imagespec.Platform{OS: "linux", Architecture: "arm64"}
	index := mustJSON(f, imagespec.Index{MediaType: imagespec.MediaTypeImageIndex, Manifests: []imagespec.Descriptor{arm64, amd64}})
	indexDesc := imagespec.Descriptor{MediaType: imagespec.MediaTypeImageIndex, Digest: digest.FromBytes(index), Size: int64(len(index))}
	for _, seed := range [][]byte{
		manifest, index,
		mustJSON(f, imagespec.Index{Manifests: []imagespec.Descriptor{indexDesc}}),
		mustJSON(f, imagespec.Index{Manifests: []imagespec.Descriptor{manifestDesc}}),
		[]byte(`{"config":{"digest":"sha256:../../etc"},"layers":[{"digest":"md5:x"}]}`),
		[]byte(`{"manifests":[]}`),
		[]byte(`null`),
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		for _, b := range [][]byte{config, manifest, index, data} {
			writeBlob(t, dir, b)
		}
		s := &Store{platform: v1.Platform{OS: "linux", Architecture: "amd64"}}
		spec := importSpec{smallBlobs: map[digest.Digest][]byte{}}
		err := s.ociManifest(archive{dir: dir}, imagespec.Descriptor{Digest: digest.FromBytes(data)}, &spec, 0)
		if err != nil {
			if !errdefs.IsInvalidArgument(err) && !errdefs.IsNotFound(err) {
				t.Fatalf("ociManifest: %v, want InvalidArgument or NotFound", err)
			}
			return
		}
		if spec.configDigest.Validate() != nil || spec.configDigest.Algorithm().FromBytes(spec.config) != spec.configDigest {
			t.Fatalf("accepted config %s of %d bytes", spec.configDigest, len(spec.config))
		}
		for d, b := range spec.smallBlobs {
			if d.Algorithm().FromBytes(b) != d {
				t.Fatalf("small blob %s does not match its bytes", d)
			}
		}
		for _, l := range spec.layers {
			if l.desc.Digest.Validate() != nil {
				t.Fatalf("accepted layer digest %q", l.desc.Digest)
			}
		}
	})
}

func sha(s string) string { return digest.FromString(s).Encoded() }

func mustJSON(f *testing.F, v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		f.Fatal(err)
	}
	return b
}

// writeBlob stores b in an OCI layout's blobs by its sha256 digest.
func writeBlob(t *testing.T, dir string, b []byte) {
	p := filepath.Join(dir, "blobs", "sha256", digest.FromBytes(b).Encoded())
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// Command node-e2e-images builds the images Kubernetes' node conformance
// suite pulls, from directories on this host, and pushes them to a
// plain-HTTP registry, keeping each image's repository path and tag:
// registry.k8s.io/e2e-test-images/agnhost:2.66.1 is pushed as
// REGISTRY/e2e-test-images/agnhost:2.66.1, so a runtime that mirrors
// registry.k8s.io to REGISTRY sees the names the suite asks for. It is run
// by scripts/node-e2e.sh, which makes the directories.
//
// Each image is a list of layers, one per directory (a rootfs, or files
// laid over it), and a config, read as JSON from -spec:
//
//	[{"ref": "registry.k8s.io/e2e-test-images/nonroot:1.5",
//	  "layers": ["/var/cache/crib-node-e2e/rootfs/debian"],
//	  "user": "1234", "cmd": ["sh"]}]
//
// Layers are written deterministically (sorted names, a fixed timestamp,
// no user or group names), so the same directories give the same digests
// and a layer shared by several images is stored once. Device nodes and
// sockets are left out: a runtime makes /dev itself.
package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// epoch is every file's and every image's timestamp, so that builds are
// reproducible.
var epoch = time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)

const defaultPath = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// Image is one image of the spec.
type Image struct {
	// Ref is the name the suite pulls; its host is replaced by -registry.
	Ref string `json:"ref"`
	// Layers are directories, bottom first.
	Layers     []string          `json:"layers"`
	Entrypoint []string          `json:"entrypoint,omitempty"`
	Cmd        []string          `json:"cmd,omitempty"`
	User       string            `json:"user,omitempty"`
	WorkingDir string            `json:"workdir,omitempty"`
	Env        []string          `json:"env,omitempty"`
	Labels     map[string]string `json:"labels,omitempty"`
	StopSignal string            `json:"stopSignal,omitempty"`
	Ports      []string          `json:"ports,omitempty"`
}

func main() {
	spec := flag.String("spec", "", "JSON list of images to build")
	registry := flag.String("registry", "127.0.0.1:5000", "plain-HTTP registry to push to")
	flag.Parse()
	if *spec == "" || flag.NArg() != 0 {
		log.Fatal("usage: node-e2e-images -spec FILE [-registry HOST:PORT]")
	}
	if err := run(*spec, *registry); err != nil {
		log.Fatal(err)
	}
}

func run(specFile, registry string) error {
	b, err := os.ReadFile(specFile)
	if err != nil {
		return err
	}
	var images []Image
	if err := json.Unmarshal(b, &images); err != nil {
		return fmt.Errorf("%s: %w", specFile, err)
	}
	// A directory several images stand on is tarred once.
	layers := map[string]v1.Layer{}
	for _, im := range images {
		if err := push(im, registry, layers); err != nil {
			return fmt.Errorf("image %s: %w", im.Ref, err)
		}
	}
	return nil
}

func push(im Image, registry string, layers map[string]v1.Layer) error {
	local, err := localRef(im.Ref, registry)
	if err != nil {
		return err
	}
	img := empty.Image
	for _, dir := range im.Layers {
		l, ok := layers[dir]
		if !ok {
			if l, err = dirLayer(dir); err != nil {
				return err
			}
			layers[dir] = l
		}
		if img, err = mutate.AppendLayers(img, l); err != nil {
			return err
		}
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return err
	}
	cf = cf.DeepCopy()
	cf.Architecture, cf.OS = "amd64", "linux"
	cf.Created = v1.Time{Time: epoch}
	cf.Config.Entrypoint = im.Entrypoint
	cf.Config.Cmd = im.Cmd
	cf.Config.User = im.User
	cf.Config.WorkingDir = im.WorkingDir
	cf.Config.Env = append([]string{defaultPath}, im.Env...)
	cf.Config.Labels = im.Labels
	cf.Config.StopSignal = im.StopSignal
	if len(im.Ports) > 0 {
		cf.Config.ExposedPorts = map[string]struct{}{}
		for _, p := range im.Ports {
			cf.Config.ExposedPorts[p] = struct{}{}
		}
	}
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		return err
	}
	img = mutate.MediaType(img, types.DockerManifestSchema2)
	img = mutate.ConfigMediaType(img, types.DockerConfigJSON)
	if err := remote.Write(local, img); err != nil {
		return fmt.Errorf("push to %s: %w", local, err)
	}
	id, err := img.ConfigName()
	if err != nil {
		return err
	}
	fmt.Printf("%s -> %s (id %s)\n", im.Ref, local, id)
	return nil
}

// localRef is ref with its registry host replaced by registry.
func localRef(ref, registry string) (name.Reference, error) {
	tag, err := name.NewTag(ref, name.StrictValidation)
	if err != nil {
		return nil, err
	}
	return name.NewTag(registry+"/"+tag.RepositoryStr()+":"+tag.TagStr(), name.Insecure)
}

// dirLayer is a gzipped layer of the tree under dir, held in memory.
func dirLayer(dir string) (v1.Layer, error) {
	var buf bytes.Buffer
	if err := tarTree(dir, &buf); err != nil {
		return nil, fmt.Errorf("layer %s: %w", dir, err)
	}
	b := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(b)), nil
	}, tarball.WithCompressionLevel(gzip.BestSpeed), tarball.WithMediaType(types.DockerLayer))
}

// tarTree writes the tree under dir as a tar stream: modes (set-uid
// included), owners and links as they are, a fixed time, hard links as
// links to the first name seen.
func tarTree(dir string, w io.Writer) error {
	tw := tar.NewWriter(w)
	type inode struct{ dev, ino uint64 }
	seen := map[inode]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil || rel == "." {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		mode := fi.Mode()
		if mode&(fs.ModeDevice|fs.ModeCharDevice|fs.ModeSocket) != 0 {
			return nil
		}
		link := ""
		if mode&fs.ModeSymlink != 0 {
			if link, err = os.Readlink(p); err != nil {
				return err
			}
		}
		h, err := tar.FileInfoHeader(fi, link)
		if err != nil {
			return err
		}
		h.Name = filepath.ToSlash(rel)
		if fi.IsDir() {
			h.Name += "/"
		}
		h.Uname, h.Gname = "", ""
		h.ModTime, h.AccessTime, h.ChangeTime = epoch, time.Time{}, time.Time{}
		h.Format = tar.FormatPAX
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			h.Uid, h.Gid = int(st.Uid), int(st.Gid)
			if mode.IsRegular() && st.Nlink > 1 {
				key := inode{uint64(st.Dev), st.Ino}
				if first, ok := seen[key]; ok {
					h.Typeflag, h.Linkname, h.Size = tar.TypeLink, first, 0
				} else {
					seen[key] = h.Name
				}
			}
		}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if h.Typeflag != tar.TypeReg {
			return nil
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		if _, err := io.Copy(tw, f); err != nil {
			return fmt.Errorf("%s: %w", strings.TrimPrefix(p, dir), err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	return tw.Close()
}

// Command busybox-image writes a single-layer busybox test image as an OCI
// image-layout tarball. It is run by scripts/build-busybox-image.sh; the
// output depends only on the busybox binary and the flags, so repeated
// builds give the same image ID.
package main

import (
	"archive/tar"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// epoch is the fixed timestamp of every file, so builds are reproducible.
var epoch = time.Unix(1700000000, 0).UTC()

const (
	passwd = "root:x:0:0:root:/root:/bin/sh\n" +
		"www:x:33:33:www:/var/www:/bin/sh\n" +
		"nobody:x:65534:65534:nobody:/nonexistent:/bin/false\n"
	group = "root:x:0:\n" +
		"www:x:33:\n" +
		"nogroup:x:65534:\n"
)

func main() {
	busybox := flag.String("busybox", "/bin/busybox", "static busybox binary")
	out := flag.String("out", "", "output tarball (OCI image layout)")
	ref := flag.String("name", "docker.io/library/busybox:latest", "image name annotation")
	flag.Parse()
	if *out == "" {
		fmt.Fprintln(os.Stderr, "busybox-image: -out is required")
		os.Exit(2)
	}
	if err := run(*busybox, *out, *ref); err != nil {
		fmt.Fprintf(os.Stderr, "busybox-image: %v\n", err)
		os.Exit(1)
	}
}

func run(busybox, out, ref string) error {
	layerTar, err := rootfs(busybox)
	if err != nil {
		return err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	})
	if err != nil {
		return fmt.Errorf("make layer: %w", err)
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		return fmt.Errorf("append layer: %w", err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return fmt.Errorf("read config: %w", err)
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", runtime.GOARCH
	cf.Created = v1.Time{Time: epoch}
	cf.Config.Cmd = []string{"sh"}
	cf.Config.Env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		return fmt.Errorf("set config: %w", err)
	}
	dir, err := os.MkdirTemp("", "busybox-layout-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return fmt.Errorf("write layout: %w", err)
	}
	ann := map[string]string{
		"org.opencontainers.image.ref.name": ref,
		"io.containerd.image.name":          ref,
	}
	if err := p.AppendImage(img, layout.WithAnnotations(ann)); err != nil {
		return fmt.Errorf("write image: %w", err)
	}
	return tarDir(dir, out)
}

type file struct {
	name, link string
	mode       int64
	uid, gid   int
	body       []byte
	typ        byte
}

// rootfs returns the layer tar: busybox, its applet links, passwd/group.
func rootfs(busybox string) ([]byte, error) {
	bin, err := os.ReadFile(busybox)
	if err != nil {
		return nil, fmt.Errorf("read busybox: %w", err)
	}
	list, err := exec.Command(busybox, "--list").Output()
	if err != nil {
		return nil, fmt.Errorf("list busybox applets: %w", err)
	}
	files := []file{
		{name: "bin/", mode: 0o755, typ: tar.TypeDir},
		{name: "bin/busybox", mode: 0o755, body: bin, typ: tar.TypeReg},
		{name: "dev/", mode: 0o755, typ: tar.TypeDir},
		{name: "etc/", mode: 0o755, typ: tar.TypeDir},
		{name: "etc/group", mode: 0o644, body: []byte(group), typ: tar.TypeReg},
		{name: "etc/hostname", mode: 0o644, body: []byte("busybox\n"), typ: tar.TypeReg},
		{name: "etc/passwd", mode: 0o644, body: []byte(passwd), typ: tar.TypeReg},
		{name: "proc/", mode: 0o755, typ: tar.TypeDir},
		{name: "root/", mode: 0o700, typ: tar.TypeDir},
		{name: "sys/", mode: 0o755, typ: tar.TypeDir},
		{name: "tmp/", mode: 0o1777, typ: tar.TypeDir},
		{name: "var/", mode: 0o755, typ: tar.TypeDir},
		{name: "var/www/", mode: 0o755, uid: 33, gid: 33, typ: tar.TypeDir},
	}
	applets := strings.Fields(string(list))
	sort.Strings(applets)
	for _, a := range applets {
		if a == "busybox" || strings.Contains(a, "/") {
			continue
		}
		files = append(files, file{name: "bin/" + a, link: "busybox", mode: 0o777, typ: tar.TypeSymlink})
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range files {
		h := &tar.Header{
			Typeflag: f.typ, Name: f.name, Linkname: f.link, Mode: f.mode,
			Uid: f.uid, Gid: f.gid, Size: int64(len(f.body)), ModTime: epoch, Format: tar.FormatPAX,
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, fmt.Errorf("write %s: %w", f.name, err)
		}
		if _, err := tw.Write(f.body); err != nil {
			return nil, fmt.Errorf("write %s: %w", f.name, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// tarDir writes dir as a tarball with fixed owners and times.
func tarDir(dir, out string) error {
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(f)
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		h := &tar.Header{Name: filepath.ToSlash(rel), ModTime: epoch, Mode: 0o644, Typeflag: tar.TypeReg}
		if d.IsDir() {
			h.Name += "/"
			h.Mode, h.Typeflag = 0o755, tar.TypeDir
			return tw.WriteHeader(h)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		h.Size = int64(len(b))
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		_, err = tw.Write(b)
		return err
	})
	if cerr := tw.Close(); err == nil {
		err = cerr
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return errors.Join(fmt.Errorf("write %s: %w", out, err), os.Remove(out))
	}
	return nil
}

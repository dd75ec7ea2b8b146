package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/crib-dev/crib/internal/api"
	"github.com/crib-dev/crib/internal/config"
	"github.com/crib-dev/crib/internal/image"
)

const imageLoadUsage = "usage: crib image load [--config FILE] [--root DIR] [--state DIR] FILE"

func imageCmd(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] != "load" {
		fmt.Fprintln(stderr, imageLoadUsage)
		return 2
	}
	fs := flag.NewFlagSet("crib image load", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfgPath := fs.String("config", config.DefaultPath, "configuration file")
	overrides := map[string]*string{
		"root":  fs.String("root", "", "persistent state directory, used when no daemon runs (default /var/lib/crib)"),
		"state": fs.String("state", "", "runtime state directory of the daemon to load into (default /run/crib)"),
	}
	if err := fs.Parse(args[1:]); err != nil {
		return 2
	}
	if fs.NArg() != 1 {
		fmt.Fprintln(stderr, imageLoadUsage)
		return 2
	}
	cfg, err := loadConfig(fs, *cfgPath, overrides)
	if err == nil {
		err = loadImages(context.Background(), cfg, fs.Arg(0), stdout)
	}
	if err != nil {
		fmt.Fprintf(stderr, "crib image load: %v\n", err)
		return 1
	}
	return 0
}

// loadImages hands the tarball to the running daemon, or, when none runs,
// loads it into the store directly.
func loadImages(ctx context.Context, cfg config.Config, path string, stdout io.Writer) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	// The HTTP client closes a body that is a Closer; the file is needed
	// again when no daemon answers.
	body := struct{ io.Reader }{f}
	loaded, err := api.NewClient(filepath.Join(cfg.State, api.SocketName)).LoadImages(ctx, body)
	if errors.Is(err, api.ErrNoDaemon) {
		loaded, err = loadDirect(ctx, cfg, f)
	}
	if err != nil {
		return err
	}
	for _, img := range loaded {
		fmt.Fprintf(stdout, "loaded %s %s\n", img.ID, strings.Join(img.RepoTags, " "))
	}
	return nil
}

func loadDirect(ctx context.Context, cfg config.Config, f *os.File) ([]api.LoadedImage, error) {
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	store, err := image.Open(ctx, image.Config{Root: filepath.Join(cfg.Root, "images")})
	if err != nil {
		return nil, err
	}
	defer store.Close()
	imgs, err := store.Load(ctx, f)
	if err != nil {
		return nil, err
	}
	out := make([]api.LoadedImage, len(imgs))
	for i, img := range imgs {
		out[i] = api.LoadedImage{ID: img.ID, RepoTags: img.RepoTags}
	}
	return out, nil
}

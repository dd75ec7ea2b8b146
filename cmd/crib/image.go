package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/crib-dev/crib/internal/config"
	"github.com/crib-dev/crib/internal/image"
)

func imageCmd(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] != "load" {
		fmt.Fprintln(stderr, "usage: crib image load [--config FILE] [--root DIR] FILE")
		return 2
	}
	fs := flag.NewFlagSet("crib image load", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfgPath := fs.String("config", config.DefaultPath, "configuration file")
	root := fs.String("root", "", "persistent state directory (default /var/lib/crib)")
	if err := fs.Parse(args[1:]); err != nil {
		return 2
	}
	if fs.NArg() != 1 {
		fmt.Fprintln(stderr, "usage: crib image load [--config FILE] [--root DIR] FILE")
		return 2
	}
	cfg, err := loadConfig(fs, *cfgPath, map[string]*string{"root": root})
	if err != nil {
		fmt.Fprintf(stderr, "crib image load: %v\n", err)
		return 1
	}
	f, err := os.Open(fs.Arg(0))
	if err != nil {
		fmt.Fprintf(stderr, "crib image load: %v\n", err)
		return 1
	}
	defer f.Close()
	ctx := context.Background()
	store, err := image.Open(ctx, image.Config{Root: filepath.Join(cfg.Root, "images")})
	if err != nil {
		fmt.Fprintf(stderr, "crib image load: %v\n", err)
		return 1
	}
	imgs, err := store.Load(ctx, f)
	if err != nil {
		fmt.Fprintf(stderr, "crib image load: %v\n", err)
		return 1
	}
	for _, img := range imgs {
		fmt.Fprintf(stdout, "loaded %s %v\n", img.ID, img.RepoTags)
	}
	return 0
}

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
	"github.com/crib-dev/crib/internal/daemon"
	"github.com/crib-dev/crib/internal/image"
)

const imageUsage = `usage: crib image COMMAND [flags] ...

Commands:
  load FILE                               load an OCI layout or docker-archive tarball
  pull REF                                pull an image from its registry
  pulls [--layers]                        list the pulls in flight (the kubelet's too), with progress
  ls                                      list images
  inspect REF                             show an image as JSON
  rm REF...                               remove images (or names of images)
  save [--format oci|docker] -o FILE REF  write an image to a tarball
  prune                                   remove every image no container uses
  verify [--namespace NS] REF             whether the signature policy allows pulling REF, by which rule

Every command takes --config FILE and --state DIR (the daemon's runtime
state directory, default /run/crib) and talks to the daemon there. When no
daemon runs, load, ls, inspect and save work on the image store under
--root DIR (default /var/lib/crib) directly; pull, rm and prune need the
daemon, which knows what its containers use. verify reads the policy and
registries of --config and asks the registry itself, daemon or not; it
exits 1 when the pull would be refused.
`

// imageEnv is what every image subcommand gets: its parsed flags' config
// and the daemon's API client.
type imageEnv struct {
	cfg    config.Config
	client *api.Client
	stdout io.Writer
	stderr io.Writer
}

type imageSub struct {
	usage string
	// args is the number of operands: exactly n, or at least -n when
	// negative.
	args int
	// direct commands work on the store under --root when no daemon runs.
	direct bool
	flags  func(fs *flag.FlagSet) func(env imageEnv, args []string) error
}

func imageSubs() map[string]imageSub {
	return map[string]imageSub{
		"load":    {usage: "load [--root DIR] FILE", args: 1, direct: true, flags: noFlags(imageLoad)},
		"pull":    {usage: "pull REF", args: 1, flags: noFlags(imagePull)},
		"pulls":   {usage: "pulls [--layers]", args: 0, flags: pullsFlags},
		"ls":      {usage: "ls [--root DIR]", args: 0, direct: true, flags: noFlags(imageList)},
		"inspect": {usage: "inspect [--root DIR] REF", args: 1, direct: true, flags: noFlags(imageInspect)},
		"rm":      {usage: "rm REF...", args: -1, flags: noFlags(imageRemove)},
		"save":    {usage: "save [--root DIR] [--format oci|docker] -o FILE REF", args: 1, direct: true, flags: saveFlags},
		"prune":   {usage: "prune", args: 0, flags: noFlags(imagePrune)},
		"verify":  {usage: "verify [--namespace NS] REF", args: 1, flags: verifyFlags},
	}
}

func noFlags(run func(env imageEnv, args []string) error) func(*flag.FlagSet) func(imageEnv, []string) error {
	return func(*flag.FlagSet) func(imageEnv, []string) error { return run }
}

func imageCmd(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(stderr, imageUsage)
		return 2
	}
	sub, ok := imageSubs()[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "crib image: unknown command %q\n\n%s", args[0], imageUsage)
		return 2
	}
	usage := "usage: crib image " + sub.usage + " [--config FILE] [--state DIR]"
	fs := flag.NewFlagSet("crib image "+args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfgPath := fs.String("config", config.DefaultPath, "configuration file")
	overrides := map[string]*string{
		"state": fs.String("state", "", "runtime state directory of the daemon (default /run/crib)"),
	}
	if sub.direct {
		overrides["root"] = fs.String("root", "", "persistent state directory, used when no daemon runs (default /var/lib/crib)")
	}
	run := sub.flags(fs)
	if err := fs.Parse(args[1:]); err != nil {
		return 2
	}
	if n := fs.NArg(); (sub.args >= 0 && n != sub.args) || (sub.args < 0 && n < -sub.args) {
		fmt.Fprintln(stderr, usage)
		return 2
	}
	cfg, err := loadConfig(fs, *cfgPath, overrides)
	if err == nil {
		env := imageEnv{cfg: cfg, client: api.NewClient(filepath.Join(cfg.State, api.SocketName)), stdout: stdout, stderr: stderr}
		err = run(env, fs.Args())
	}
	if err != nil {
		fmt.Fprintf(stderr, "crib image %s: %v\n", args[0], err)
		return 1
	}
	return 0
}

func imageLoad(env imageEnv, args []string) error {
	return loadImages(context.Background(), env.cfg, env.client, args[0], env.stdout)
}

// loadImages hands the tarball to the running daemon, or, when none runs,
// loads it into the store directly.
func loadImages(ctx context.Context, cfg config.Config, client *api.Client, path string, stdout io.Writer) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	// The HTTP client closes a body that is a Closer; the file is needed
	// again when no daemon answers.
	body := struct{ io.Reader }{f}
	loaded, err := client.LoadImages(ctx, body)
	if errors.Is(err, api.ErrNoDaemon) {
		loaded, err = loadDirect(ctx, cfg, f)
	}
	if err != nil {
		return err
	}
	// An OCI layout lists an image once per tag: report each image once,
	// with the names it has after the load.
	var order []string
	last := map[string]api.LoadedImage{}
	for _, img := range loaded {
		if _, ok := last[img.ID]; !ok {
			order = append(order, img.ID)
		}
		last[img.ID] = img
	}
	for _, id := range order {
		fmt.Fprintf(stdout, "loaded %s %s\n", id, strings.Join(last[id].RepoTags, " "))
	}
	return nil
}

// withStore opens the image store under the configured root for a command
// run while no daemon does.
func withStore(ctx context.Context, cfg config.Config, fn func(*image.Store) error) error {
	store, err := image.Open(ctx, image.Config{Root: filepath.Join(cfg.Root, "images"), LayerLimits: daemon.LayerLimits(cfg)})
	if err != nil {
		return err
	}
	defer store.Close()
	return fn(store)
}

func loadDirect(ctx context.Context, cfg config.Config, f *os.File) ([]api.LoadedImage, error) {
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	var imgs []image.Image
	err := withStore(ctx, cfg, func(store *image.Store) error {
		var err error
		imgs, err = store.Load(ctx, f)
		return err
	})
	if err != nil {
		return nil, err
	}
	out := make([]api.LoadedImage, len(imgs))
	for i, img := range imgs {
		out[i] = api.LoadedImage{ID: img.ID, RepoTags: img.RepoTags}
	}
	return out, nil
}

package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/crib-dev/crib/internal/api"
	"github.com/crib-dev/crib/internal/image"
)

func imageList(env imageEnv, _ []string) error {
	ctx := context.Background()
	imgs, err := env.client.ListImages(ctx)
	if errors.Is(err, api.ErrNoDaemon) {
		err = withStore(ctx, env.cfg, func(s *image.Store) error {
			imgs = nil
			for _, img := range s.List() {
				imgs = append(imgs, api.NewImageInfo(img, false))
			}
			return nil
		})
	}
	if err != nil {
		return err
	}
	rows := listRows(imgs)
	tw := tabwriter.NewWriter(env.stdout, 0, 4, 3, ' ', 0)
	fmt.Fprintln(tw, "IMAGE\tTAG\tIMAGE ID\tSIZE\tPINNED")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%t\n", r.repo, r.tag, r.id, r.size, r.pinned)
	}
	return tw.Flush()
}

type listRow struct {
	repo, tag, id, size string
	pinned              bool
}

// listRows makes one row per tag (one for an untagged image), sorted by
// repository and tag.
func listRows(imgs []api.ImageInfo) []listRow {
	var rows []listRow
	for _, img := range imgs {
		row := listRow{id: shortDigest(img.ID), size: humanSize(img.Size), pinned: img.Pinned}
		if len(img.Tags) == 0 {
			row.repo, row.tag = "<none>", "<none>"
			if len(img.Digests) > 0 {
				row.repo, _, _ = strings.Cut(img.Digests[0], "@")
			}
			rows = append(rows, row)
			continue
		}
		for _, t := range img.Tags {
			row.repo, row.tag = splitTag(t)
			rows = append(rows, row)
		}
	}
	sort.SliceStable(rows, func(i, j int) bool {
		if rows[i].repo != rows[j].repo {
			return rows[i].repo < rows[j].repo
		}
		return rows[i].tag < rows[j].tag
	})
	return rows
}

// splitTag splits a tag reference at the tag's colon (not a port's).
func splitTag(ref string) (repo, tag string) {
	i := strings.LastIndex(ref, ":")
	if i < 0 || strings.Contains(ref[i:], "/") {
		return ref, "<none>"
	}
	return ref[:i], ref[i+1:]
}

func imageInspect(env imageEnv, args []string) error {
	ctx := context.Background()
	info, err := env.client.InspectImage(ctx, args[0])
	if errors.Is(err, api.ErrNoDaemon) {
		err = withStore(ctx, env.cfg, func(s *image.Store) error {
			img, err := s.Resolve(args[0])
			info = api.NewImageInfo(img, true)
			return err
		})
	}
	if err != nil {
		return err
	}
	b, err := json.MarshalIndent(info, "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(env.stdout, "%s\n", b)
	return err
}

func imageRemove(env imageEnv, args []string) error {
	var errs []error
	for _, ref := range args {
		if err := env.client.RemoveImage(context.Background(), ref); err != nil {
			errs = append(errs, err)
			continue
		}
		fmt.Fprintf(env.stdout, "removed %s\n", ref)
	}
	return errors.Join(errs...)
}

func imagePrune(env imageEnv, _ []string) error {
	res, err := env.client.PruneImages(context.Background())
	if err != nil {
		return err
	}
	for _, id := range res.Removed {
		fmt.Fprintf(env.stdout, "removed %s\n", id)
	}
	fmt.Fprintf(env.stdout, "%d images removed, %s freed\n", len(res.Removed), humanSize(int64(res.BytesFreed)))
	return nil
}

func saveFlags(fs *flag.FlagSet) func(imageEnv, []string) error {
	format := fs.String("format", image.FormatOCI, "tarball format: oci (an OCI image layout) or docker (docker save)")
	out := fs.String("o", "", "file to write (required)")
	return func(env imageEnv, args []string) error {
		if *out == "" {
			return fmt.Errorf("-o FILE is required")
		}
		if *format != image.FormatOCI && *format != image.FormatDocker {
			return fmt.Errorf("--format %q: want oci or docker", *format)
		}
		return saveImage(env, args[0], *format, *out)
	}
}

// saveImage writes to a temporary file beside out and renames it into
// place, so a failed save leaves no partial tarball.
func saveImage(env imageEnv, ref, format, out string) error {
	f, err := os.CreateTemp(filepath.Dir(out), ".crib-save-")
	if err != nil {
		return fmt.Errorf("create %s: %w", out, err)
	}
	tmp := f.Name()
	ctx := context.Background()
	err = env.client.SaveImage(ctx, ref, format, f)
	if errors.Is(err, api.ErrNoDaemon) {
		err = withStore(ctx, env.cfg, func(s *image.Store) error {
			return s.Save(ctx, ref, format, f)
		})
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp, 0o644)
	}
	if err == nil {
		err = os.Rename(tmp, out)
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	fmt.Fprintf(env.stdout, "saved %s to %s\n", ref, out)
	return nil
}

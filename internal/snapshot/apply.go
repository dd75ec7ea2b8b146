package snapshot

import (
	"archive/tar"
	"context"
	"fmt"
	"io"
	"os"
)

// Apply unpacks the tar r, size bytes long, onto root, a directory the
// caller owns while it runs (a restored container's mounted rootfs, given
// its checkpoint's rootfs-diff.tar), with the checks a layer gets: every
// entry stays inside root, names within the kernel's lengths, and no more
// bytes are written than the tar holds (a sparse entry cannot inflate it);
// l's entry count and free-space reserve apply too. An archive is as
// untrusted as an image layer: one extractor reads both. idmap, when set,
// maps each entry's owner (a restore into another user namespace).
func Apply(ctx context.Context, root string, r io.Reader, size int64, l Limits, idmap func(uid, gid int) (int, int)) error {
	l.MaxSize, l.ExpansionRatio, l.ExpansionFloor = 0, 1, 0
	fi, err := os.Stat(root)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("apply a tar to %s: not a directory", root)
	}
	g, err := newGuard(l, root, size)
	if err != nil {
		return err
	}
	g.maxWhy = fmt.Sprintf("its tar's %d bytes: entries declare more", size)
	return extractMapped(ctx, root, tar.NewReader(&countingReader{r: r, g: g}), g, idmap)
}

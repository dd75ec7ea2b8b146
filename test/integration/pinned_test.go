package integration

import (
	"path/filepath"
	"slices"
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/crib-dev/crib/internal/api"
	"github.com/crib-dev/crib/internal/testutil"
)

// TestPinnedImages: an image named in pinned_images is reported pinned to
// the kubelet (ImageStatus, ListImages), so that its image GC leaves it,
// and crib's own prune leaves it too (internal/image tests that an
// unpinned unused image goes).
func TestPinnedImages(t *testing.T) {
	testutil.RequiresRoot(t)
	t.Parallel()
	img := testutil.Busybox(t)
	d := testutil.StartDaemon(t, testutil.Options{Image: &img, ExtraConfig: "pinned_images = [\"" + img.Ref + "\"]\n"})
	e := &env{t: t, d: d, img: img}

	st, err := d.Images.ImageStatus(e.ctx(), &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: img.Ref}})
	if err != nil || st.Image == nil {
		t.Fatalf("ImageStatus %s: %v, %v", img.Ref, st, err)
	}
	if !st.Image.Pinned {
		t.Errorf("ImageStatus of %s: pinned = false, want true (pinned_images names it)", img.Ref)
	}
	list, err := d.Images.ListImages(e.ctx(), &runtimeapi.ListImagesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range list.Images {
		if i.Id == st.Image.Id && !i.Pinned {
			t.Errorf("ListImages reports %s unpinned", img.Ref)
		}
	}

	client := api.NewClient(filepath.Join(d.State, api.SocketName))
	pruned, err := client.PruneImages(e.ctx())
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(pruned.Removed, st.Image.Id) || slices.Contains(pruned.Removed, img.Ref) {
		t.Errorf("prune removed the pinned image: %v", pruned.Removed)
	}
	if st, err := d.Images.ImageStatus(e.ctx(), &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: img.Ref}}); err != nil || st.Image == nil {
		t.Errorf("the pinned image is gone after a prune: %v, %v", st, err)
	}
}

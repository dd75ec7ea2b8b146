package volume

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/containerd/errdefs"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestEmptyDirDiskKeepsContent(t *testing.T) {
	m, root := newTestManager(t)
	ctx := context.Background()
	pod := testPod("uid-disk",
		vol("cache", corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}),
		vol("nosource", corev1.VolumeSource{}),
		vol("img", corev1.VolumeSource{Image: &corev1.ImageVolumeSource{Reference: "busybox"}}),
	)
	removeAtCleanup(t, m, "uid-disk")
	paths, err := m.Prepare(ctx, pod, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"cache":    filepath.Join(root, "uid-disk", "volumes", pluginEmptyDir, "cache"),
		"nosource": filepath.Join(root, "uid-disk", "volumes", pluginEmptyDir, "nosource"),
		"img":      "", // the runtime mounts it; nothing is made on the host
	}
	if diff := cmp.Diff(want, paths); diff != "" {
		t.Fatalf("paths (-want +got):\n%s", diff)
	}
	if got := perm(t, paths["cache"]); got != 0o777 {
		t.Errorf("emptyDir mode %v, want 0777", got)
	}
	if err := os.WriteFile(filepath.Join(paths["cache"], "kept"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	again, err := m.Prepare(ctx, pod, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(paths, again); diff != "" {
		t.Errorf("second Prepare paths (-first +second):\n%s", diff)
	}
	if got := readFile(t, filepath.Join(paths["cache"], "kept")); got != "x" {
		t.Errorf("content after second Prepare %q, want %q", got, "x")
	}
}

func TestEmptyDirMemoryMountedOnce(t *testing.T) {
	requireRoot(t)
	m, _ := newTestManager(t)
	ctx := context.Background()
	limit := resource.MustParse("1Mi")
	pod := testPod("uid-mem", vol("shm", corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{
		Medium: corev1.StorageMediumMemory, SizeLimit: &limit,
	}}))
	removeAtCleanup(t, m, "uid-mem")
	paths, err := m.Prepare(ctx, pod, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	dir := paths["shm"]
	if err := os.WriteFile(filepath.Join(dir, "kept"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := m.Prepare(ctx, pod, nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	mounts := mountsAt(t, dir)
	if len(mounts) != 1 || mounts[0].fsType != "tmpfs" {
		t.Fatalf("mounts at %s: %+v, want one tmpfs", dir, mounts)
	}
	if !strings.Contains(mounts[0].options, "size=1024k") || !strings.Contains(mounts[0].options, "mode=777") {
		t.Errorf("tmpfs options %q, want size=1024k and mode=777", mounts[0].options)
	}
	if got := readFile(t, filepath.Join(dir, "kept")); got != "x" {
		t.Errorf("content after Prepare again %q, want %q", got, "x")
	}
	// The size limit is the kernel's to enforce.
	err = os.WriteFile(filepath.Join(dir, "big"), make([]byte, 2<<20), 0o600)
	if !errors.Is(err, syscall.ENOSPC) {
		t.Errorf("writing 2 MiB into a 1 MiB emptyDir: %v, want ENOSPC", err)
	}
}

func TestEmptyDirUnsupportedMedium(t *testing.T) {
	m, _ := newTestManager(t)
	pod := testPod("uid-huge", vol("huge", corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumHugePages}}))
	removeAtCleanup(t, m, "uid-huge")
	_, err := m.Prepare(context.Background(), pod, nil, nil)
	wantErrClass(t, err, errdefs.ErrInvalidArgument, `"huge"`, "HugePages")
}

func TestUsageAndOverLimit(t *testing.T) {
	m, _ := newTestManager(t)
	ctx := context.Background()
	limit := resource.MustParse("64Ki")
	pod := testPod("uid-usage",
		vol("big", corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: &limit}}),
		vol("small", corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: &limit}}),
	)
	removeAtCleanup(t, m, "uid-usage")
	paths, err := m.Prepare(ctx, pod, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	// 128 KiB of data, a hard link to it (counted once) and a symlink to a
	// large file outside (not followed).
	data := make([]byte, 128<<10)
	for i := range data {
		data[i] = byte(i)
	}
	if err := os.WriteFile(filepath.Join(paths["big"], "data"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(filepath.Join(paths["big"], "data"), filepath.Join(paths["big"], "link")); err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(t.TempDir(), "outside")
	if err := os.WriteFile(outside, make([]byte, 1<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(paths["small"], "escape")); err != nil {
		t.Fatal(err)
	}
	usage, err := m.Usage("uid-usage")
	if err != nil {
		t.Fatal(err)
	}
	if got := usage["big"]; got < 128<<10 || got >= 2*(128<<10) {
		t.Errorf("usage of big = %d, want about 128 KiB (hard link once)", got)
	}
	if got := usage["small"]; got >= 64<<10 {
		t.Errorf("usage of small = %d: the symlink's target was counted", got)
	}
	name, over := OverLimit(pod, usage)
	if name != "big" || !over {
		t.Errorf("OverLimit = %q, %v; want big, true", name, over)
	}

	none, err := m.Usage("uid-absent")
	if err != nil || len(none) != 0 {
		t.Errorf("Usage of an unknown pod = %v, %v; want empty, nil", none, err)
	}
}

func TestOverLimit(t *testing.T) {
	q := func(s string) *resource.Quantity { v := resource.MustParse(s); return &v }
	tests := []struct {
		name     string
		vols     []corev1.Volume
		usage    map[string]int64
		wantName string
		wantOver bool
	}{
		{
			name:  "under the limit",
			vols:  []corev1.Volume{vol("a", corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: q("1Ki")}})},
			usage: map[string]int64{"a": 1024},
		},
		{
			name:     "over the limit",
			vols:     []corev1.Volume{vol("a", corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: q("1Ki")}})},
			usage:    map[string]int64{"a": 1025},
			wantName: "a", wantOver: true,
		},
		{
			name:  "no limit",
			vols:  []corev1.Volume{vol("a", corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}})},
			usage: map[string]int64{"a": 1 << 40},
		},
		{
			name:  "memory medium is the kernel's business",
			vols:  []corev1.Volume{vol("a", corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory, SizeLimit: q("1Ki")}})},
			usage: map[string]int64{"a": 8192},
		},
		{
			name:  "no usage reported",
			vols:  []corev1.Volume{vol("a", corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: q("1Ki")}})},
			usage: map[string]int64{},
		},
		{
			name: "second volume over",
			vols: []corev1.Volume{
				vol("a", corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: q("1Mi")}}),
				vol("b", corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: q("1Ki")}}),
			},
			usage:    map[string]int64{"a": 4096, "b": 4096},
			wantName: "b", wantOver: true,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			name, over := OverLimit(testPod("u", tc.vols...), tc.usage)
			if name != tc.wantName || over != tc.wantOver {
				t.Errorf("OverLimit = %q, %v; want %q, %v", name, over, tc.wantName, tc.wantOver)
			}
		})
	}
	if _, over := OverLimit(nil, nil); over {
		t.Error("OverLimit(nil) is over")
	}
}

func TestReadOnly(t *testing.T) {
	tests := []struct {
		src  corev1.VolumeSource
		want bool
	}{
		{corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}, false},
		{corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/x"}}, false},
		{corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{}}, true},
		{corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{}}, true},
		{corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{}}, true},
		{corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{}}, true},
	}
	for _, tc := range tests {
		v := vol("v", tc.src)
		if got := ReadOnly(&v); got != tc.want {
			t.Errorf("ReadOnly(%s) = %v, want %v", sourceKind(&v.VolumeSource), got, tc.want)
		}
	}
	if ReadOnly(nil) {
		t.Error("ReadOnly(nil) = true")
	}
}

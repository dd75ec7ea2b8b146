package integration

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// TestImageFsInfoCountsWritableLayers checks that ImageFsInfo reports the
// containers' writable layers as the container filesystem, growing with
// what a container writes, on the same mountpoint as the image filesystem
// (crib keeps both under its root, and the kubelet reads differing
// mountpoints as separate disks).
func TestImageFsInfoCountsWritableLayers(t *testing.T) {
	e := newEnv(t)
	fsInfo := func() (img, ctr *runtimeapi.FilesystemUsage) {
		t.Helper()
		resp, err := e.d.Images.ImageFsInfo(e.ctx(), &runtimeapi.ImageFsInfoRequest{})
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.ImageFilesystems) != 1 || len(resp.ContainerFilesystems) != 1 {
			t.Fatalf("ImageFsInfo: %d image and %d container filesystems, want 1 and 1", len(resp.ImageFilesystems), len(resp.ContainerFilesystems))
		}
		img, ctr = resp.ImageFilesystems[0], resp.ContainerFilesystems[0]
		if im, cm := img.GetFsId().GetMountpoint(), ctr.GetFsId().GetMountpoint(); im != cm || !strings.HasPrefix(im, e.d.Root+"/") {
			t.Errorf("image fs mountpoint %q, container fs mountpoint %q: want one directory under %s", im, cm, e.d.Root)
		}
		return img, ctr
	}

	img, empty := fsInfo()
	if img.GetUsedBytes().GetValue() == 0 || img.GetInodesUsed().GetValue() == 0 {
		t.Errorf("image fs usage %v with an image stored", img)
	}
	if empty.GetUsedBytes().GetValue() != 0 || empty.GetInodesUsed().GetValue() != 0 {
		t.Errorf("container fs usage %v with no container", empty)
	}

	const written = 3 << 20
	pod := e.podConfig("fsinfo")
	podID := e.runPod(pod)
	id := e.create(podID, pod, e.ctrConfig("writer", "sh", "-c",
		"head -c 3145728 /dev/zero > /filler && sync && echo written && exec sleep 3600"))
	_, before := fsInfo()
	e.start(id)
	waitLog(t, filepath.Join(pod.LogDirectory, "writer.log"), "written", 30*time.Second)
	_, after := fsInfo()
	if got, floor := after.GetUsedBytes().GetValue(), before.GetUsedBytes().GetValue()+written; got < floor {
		t.Errorf("container fs used bytes %d after writing %d bytes, want at least %d", got, written, floor)
	}
	if after.GetInodesUsed().GetValue() <= before.GetInodesUsed().GetValue() {
		t.Errorf("container fs inodes %d after creating a file, %d before", after.GetInodesUsed().GetValue(), before.GetInodesUsed().GetValue())
	}
	if _, err := e.rt().StopPodSandbox(e.ctx(), &runtimeapi.StopPodSandboxRequest{PodSandboxId: podID}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.rt().RemovePodSandbox(e.ctx(), &runtimeapi.RemovePodSandboxRequest{PodSandboxId: podID}); err != nil {
		t.Fatal(err)
	}
	if _, gone := fsInfo(); gone.GetUsedBytes().GetValue() != 0 {
		t.Errorf("container fs usage %v after removing the only container", gone)
	}
}

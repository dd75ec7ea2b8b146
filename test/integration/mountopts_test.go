package integration

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// TestMountOptions runs pods whose mounts ask for noexec, nodev and nosuid
// (KEP-5855), as the kubelet sends a volumeMount's bindMountOptions, beside
// mounts of the same file system that ask for none: the options are in the
// container's mountinfo only where asked, a binary is unexecutable and a
// device node unopenable only there, with readonly, recursive read-only,
// host-to-container propagation, an image volume and, in a pod of its own
// user namespace, id-mapped mounts. An option crib does not take is refused
// with the field named.
func TestMountOptions(t *testing.T) {
	e := newEnv(t)
	st, err := e.rt().Status(e.ctx(), &runtimeapi.StatusRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if !st.GetFeatures().GetMountOptions() {
		t.Fatalf("Status features = %v, want mount_options: the kubelet refuses pods with bindMountOptions otherwise", st.GetFeatures())
	}
	rro := false
	for _, h := range st.RuntimeHandlers {
		if h.Name == "" {
			rro = h.Features.GetRecursiveReadOnlyMounts()
		}
	}
	if !rro {
		t.Log("the default handler has no recursive read-only mounts: /rro is not checked")
	}

	// One tmpfs with none of the flags, so that a flag in a container's
	// mountinfo can only come from its mount's options; every mount below
	// binds a directory of it.
	src := filepath.Join(e.d.Dir, "volumes", "opts")
	if err := os.MkdirAll(src, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", src, "tmpfs", 0, "mode=0755"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unix.Unmount(src, unix.MNT_DETACH) })
	for _, dir := range []string{"plain", "opts", "ro", "rro"} {
		if err := os.Mkdir(filepath.Join(src, dir), 0o777); err != nil {
			t.Fatal(err)
		}
		// /dev/null's numbers, which every container's device rules allow.
		if err := unix.Mknod(filepath.Join(src, dir, "null"), unix.S_IFCHR|0o666, int(unix.Mkdev(1, 3))); err != nil {
			t.Fatal(err)
		}
	}
	all := []string{"noexec", "nosuid", "nodev"}

	// mounts are the test's mounts; pod's user namespace, if any, maps them.
	mounts := func(userns *runtimeapi.UserNamespace) []*runtimeapi.Mount {
		ms := []*runtimeapi.Mount{
			{ContainerPath: "/plain", HostPath: filepath.Join(src, "plain")},
			{ContainerPath: "/opts", HostPath: filepath.Join(src, "opts"), MountOptions: all,
				Propagation: runtimeapi.MountPropagation_PROPAGATION_HOST_TO_CONTAINER},
			{ContainerPath: "/ro", HostPath: filepath.Join(src, "ro"), Readonly: true, MountOptions: []string{"noexec"}},
			{ContainerPath: "/img", Image: &runtimeapi.ImageSpec{Image: e.img.Ref}},
			{ContainerPath: "/img-noexec", Image: &runtimeapi.ImageSpec{Image: e.img.Ref}, MountOptions: []string{"noexec"}},
		}
		if rro {
			ms = append(ms, &runtimeapi.Mount{ContainerPath: "/rro", HostPath: filepath.Join(src, "rro"), Readonly: true, RecursiveReadOnly: true, MountOptions: []string{"nodev"}})
		}
		if userns != nil {
			for _, m := range ms {
				if m.Image == nil {
					m.UidMappings, m.GidMappings = userns.Uids, userns.Gids
				}
			}
		}
		return ms
	}

	// check runs in the container id of e's test.
	check := func(e *env, id string) {
		t := e.t
		// The per-mount options of each mount point (mountinfo's 6th field).
		opts := map[string][]string{}
		for _, line := range strings.Split(e.execOut(id, "cat", "/proc/self/mountinfo"), "\n") {
			if f := strings.Fields(line); len(f) > 5 {
				opts[f[4]] = strings.Split(f[5], ",")
			}
		}
		want := []struct {
			mnt         string
			has, hasNot []string
		}{
			{"/plain", []string{"rw"}, all},
			{"/opts", append([]string{"rw"}, all...), nil},
			{"/ro", []string{"ro", "noexec"}, []string{"nosuid", "nodev"}},
			// An image volume's source is crib's overlay: only what the
			// mount asks is checked.
			{"/img", []string{"ro"}, []string{"noexec"}},
			{"/img-noexec", []string{"ro", "noexec"}, nil},
		}
		if rro {
			want = append(want, struct {
				mnt         string
				has, hasNot []string
			}{"/rro", []string{"ro", "nodev"}, []string{"noexec", "nosuid"}})
		}
		for _, w := range want {
			got, ok := opts[w.mnt]
			if !ok {
				t.Errorf("%s is not in the container's mountinfo", w.mnt)
				continue
			}
			for _, flag := range w.has {
				if !slices.Contains(got, flag) {
					t.Errorf("%s is mounted %s, want %s", w.mnt, strings.Join(got, ","), flag)
				}
			}
			for _, flag := range w.hasNot {
				if slices.Contains(got, flag) {
					t.Errorf("%s is mounted %s, want no %s", w.mnt, strings.Join(got, ","), flag)
				}
			}
		}

		// noexec: the image's busybox, copied into each writable mount as
		// its applet true, runs from where no noexec was asked only.
		e.execOut(id, "cp", "/bin/busybox", "/plain/true")
		e.execOut(id, "cp", "/bin/busybox", "/opts/true")
		for cmd, runs := range map[string]bool{
			"/plain/true": true, "/opts/true": false, "/img/bin/busybox true": true, "/img-noexec/bin/busybox true": false,
		} {
			r := e.exec(id, "sh", "-c", cmd)
			if runs && r.ExitCode != 0 {
				t.Errorf("%s: exit %d, %s; want it to run", cmd, r.ExitCode, r.Stderr)
			}
			if !runs && (r.ExitCode == 0 || !strings.Contains(string(r.Stderr), "Permission denied")) {
				t.Errorf("%s on a noexec mount: exit %d, %s; want permission denied", cmd, r.ExitCode, r.Stderr)
			}
		}
		// nodev: the same device node opens where no nodev was asked only.
		for dev, opens := range map[string]bool{"/plain/null": true, "/opts/null": false} {
			r := e.exec(id, "sh", "-c", "echo x > "+dev)
			if opens && r.ExitCode != 0 {
				t.Errorf("write to %s: exit %d, %s; want it to open", dev, r.ExitCode, r.Stderr)
			}
			if !opens && (r.ExitCode == 0 || !strings.Contains(string(r.Stderr), "Permission denied")) {
				t.Errorf("write to %s on a nodev mount: exit %d, %s; want permission denied", dev, r.ExitCode, r.Stderr)
			}
		}
	}

	t.Run("own namespaces", func(t *testing.T) {
		e := &env{t: t, d: e.d, img: e.img}
		pod := e.podConfig("mountopts")
		podID := e.runPod(pod)
		cfg := e.ctrConfig("app", "sleep", "3600")
		cfg.Mounts = mounts(nil)
		id := e.run(podID, pod, cfg)
		e.waitState(id, runtimeapi.ContainerState_CONTAINER_RUNNING, 30*time.Second)
		check(e, id)

		bad := e.ctrConfig("bad", "sleep", "3600")
		bad.Mounts = []*runtimeapi.Mount{{ContainerPath: "/opts", HostPath: filepath.Join(src, "opts"), MountOptions: []string{"nodev", "noatime"}}}
		_, err := e.rt().CreateContainer(e.ctx(), &runtimeapi.CreateContainerRequest{PodSandboxId: podID, Config: bad, SandboxConfig: pod})
		if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), `config.mounts[0].mount_options[1]: "noatime"`) {
			t.Errorf("CreateContainer with mount option noatime: %v, want InvalidArgument naming config.mounts[0].mount_options[1] and the option", err)
		}
		list, err := e.rt().ListContainers(e.ctx(), &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{PodSandboxId: podID}})
		if err != nil {
			t.Fatal(err)
		}
		if len(list.Containers) != 1 {
			t.Errorf("pod has %d containers after the refused one, want 1", len(list.Containers))
		}
	})

	t.Run("user namespace", func(t *testing.T) {
		e := &env{t: t, d: e.d, img: e.img}
		e.requireUserNamespaces()
		pod := e.usernsPod("mountopts-userns", 9<<16)
		podID := e.runPod(pod)
		cfg := e.usernsCtr(pod, "app", "sleep", "3600")
		cfg.Mounts = mounts(pod.Linux.SecurityContext.NamespaceOptions.UsernsOptions)
		id := e.run(podID, pod, cfg)
		e.waitState(id, runtimeapi.ContainerState_CONTAINER_RUNNING, 30*time.Second)
		if got := e.execOut(id, "cat", "/proc/self/uid_map"); !strings.HasPrefix(strings.Join(strings.Fields(got), " "), "0 589824 ") {
			t.Fatalf("uid_map in the pod = %q, want the pod's own range", got)
		}
		check(e, id)
	})
}

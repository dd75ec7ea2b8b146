package kuberuntime

import (
	"fmt"
	"strings"
	"testing"

	"github.com/containerd/errdefs"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// subPathPod has an emptyDir "data" mounted whole, by subPath and by
// subPathExpr.
func subPathPod() *corev1.Pod {
	return testPod(func(p *corev1.Pod) {
		p.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
		c := &p.Spec.Containers[0]
		c.Env = []corev1.EnvVar{{Name: "WHO", Value: "web"}}
		c.VolumeMounts = []corev1.VolumeMount{
			{Name: "data", MountPath: "/all"},
			{Name: "data", MountPath: "/logs", SubPathExpr: "logs/$(WHO)"},
			{Name: "data", MountPath: "/conf", SubPath: "conf"},
		}
	})
}

func TestSubPathsArePreparedBeforeCreate(t *testing.T) {
	e := newEnv(t)
	pod := subPathPod()
	e.mustSync(pod)
	calls := e.log.since(0)
	want := []string{
		"Volumes.PrepareSubPath:uid-1:data:/vol/data:logs/web:app:1",
		"Volumes.PrepareSubPath:uid-1:data:/vol/data:conf:app:2",
	}
	if got := withPrefix(calls, "Volumes.PrepareSubPath"); !cmp.Equal(got, want) {
		t.Errorf("PrepareSubPath calls %v, want %v", got, want)
	}
	before(t, calls, want[1], "CreateContainer:app:0")
	var got []string
	for _, m := range e.rt.lastCreated().GetMounts() {
		got = append(got, m.ContainerPath+"="+m.HostPath)
	}
	wantMounts := []string{"/all=/vol/data", "/logs=/subpaths/data/app/1", "/conf=/subpaths/data/app/2"}
	if !cmp.Equal(got, wantMounts) {
		t.Errorf("mounts %v, want %v", got, wantMounts)
	}

	// A recreated container has its subPaths prepared again.
	id := e.running(pod, "app").ID
	e.rt.exit(t, id, 0, e.clk.Now())
	mark := e.log.len()
	e.mustSync(pod)
	if got := withPrefix(e.log.since(mark), "Volumes.PrepareSubPath"); !cmp.Equal(got, want) {
		t.Errorf("PrepareSubPath calls on restart %v, want %v", got, want)
	}
}

func TestSubPathRefusedIsCreateContainerConfigError(t *testing.T) {
	e := newEnv(t)
	pod := subPathPod()
	e.vol.subPathErr = fmt.Errorf(`prepare subPath "conf" of volume "data": symlink leads out of the volume: %w`, errdefs.ErrInvalidArgument)
	if res := e.sync(pod); res.Err == nil {
		t.Fatal("SyncPod: no error after PrepareSubPath failed")
	}
	w := e.waitingOf(string(pod.UID))["app"]
	if w.Reason != reasonCreateConfigError || !strings.Contains(w.Message, "leads out of the volume") {
		t.Errorf("Waiting[app] = %+v, want %s with the volume's message", w, reasonCreateConfigError)
	}
	if n := e.creates(); n != 0 {
		t.Errorf("%d CreateContainer calls after the subPath was refused", n)
	}
	if got := e.rt.containerIDs(runtimeapi.ContainerState_CONTAINER_CREATED); len(got) != 0 {
		t.Errorf("containers created: %v", got)
	}
}

package agenttest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/crib-dev/crib/internal/agent/podcgroup"
	"github.com/crib-dev/crib/internal/testutil"
)

// testInitContainers: two init containers append to a file of an emptyDir
// one after the other, each to success, before the app prints the file.
func testInitContainers(t *testing.T, s *suite) {
	const name = "init-order"
	mount := []corev1.VolumeMount{{Name: "work", MountPath: "/work"}}
	one := s.env.shell("one", "echo one >> /work/out")
	two := s.env.shell("two", "echo two >> /work/out")
	app := s.env.shell("app", "cat /work/out; "+sleepForever)
	one.VolumeMounts, two.VolumeMounts, app.VolumeMounts = mount, mount, mount
	pod := podSpec(name, app)
	pod.Spec.InitContainers = []corev1.Container{one, two}
	pod.Spec.Volumes = []corev1.Volume{{Name: "work", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	s.h.writePod(t, pod)

	p := s.h.waitFor(t, name, "app running, initialized", longWait, func(p *corev1.Pod) bool {
		return running(p, "app") && condition(p, corev1.PodInitialized) == corev1.ConditionTrue
	})
	for _, c := range []string{"one", "two"} {
		st := containerStatus(p, c)
		if st == nil || st.State.Terminated == nil {
			t.Fatalf("init container %s: want terminated, got %+v", c, st)
		}
		if got := st.State.Terminated; got.Reason != "Completed" || got.ExitCode != 0 {
			t.Errorf("init container %s terminated with %q exit %d, want Completed exit 0", c, got.Reason, got.ExitCode)
		}
		if st.RestartCount != 0 {
			t.Errorf("init container %s restarted %d times", c, st.RestartCount)
		}
	}
	first, second := containerStatus(p, "one").State.Terminated, containerStatus(p, "two").State.Terminated
	if second.StartedAt.Before(&first.FinishedAt) {
		t.Errorf("init container two started at %v, before one finished at %v", second.StartedAt, first.FinishedAt)
	}
	if p.Status.Phase != corev1.PodRunning {
		t.Errorf("phase %s, want Running", p.Status.Phase)
	}
	// The rest of a running pod's status, as the kubelet fills it.
	for _, c := range []corev1.PodConditionType{corev1.PodScheduled, corev1.ContainersReady, corev1.PodReady} {
		if got := condition(p, c); got != corev1.ConditionTrue {
			t.Errorf("condition %s is %q, want True", c, got)
		}
	}
	if p.Status.PodIP == "" || p.Status.StartTime == nil || p.Status.QOSClass != corev1.PodQOSBestEffort {
		t.Errorf("podIP %q, startTime %v, qosClass %q: want an IP, a time and BestEffort", p.Status.PodIP, p.Status.StartTime, p.Status.QOSClass)
	}
	if st := containerStatus(p, "app"); !st.Ready || st.Started == nil || !*st.Started || st.ImageID == "" || st.ContainerID == "" {
		t.Errorf("app status: ready %v, started %v, imageID %q, containerID %q", st.Ready, st.Started, st.ImageID, st.ContainerID)
	}
	// The agent made the pod's cgroup in its QoS class (a slice under
	// systemd), and the app's processes live under it.
	podCg := podcgroup.New(podcgroup.Config{Root: s.h.CgroupRoot, Driver: testutil.CgroupDriver()}, nil).PodCgroup(p)
	dirs := testutil.CgroupDirs(podCg)
	busy := false
	for _, dir := range dirs {
		_ = filepath.WalkDir(dir, func(path string, e os.DirEntry, err error) error {
			if err == nil && e.Name() == "cgroup.procs" && path != filepath.Join(dir, "cgroup.procs") {
				if procs, err := os.ReadFile(path); err == nil && len(strings.TrimSpace(string(procs))) > 0 {
					busy = true
				}
			}
			return nil
		})
	}
	if !busy {
		t.Errorf("no process of the pod runs under its cgroup %s (in %v)", podCg, dirs)
	}
	path := podLogDir(s.h.LogRoot, p) + "/app/0.log"
	lines := waitLog(t, path, "holds the file", func(l []string) bool { return len(l) >= 2 })
	if diff := cmp.Diff([]string{"one", "two"}, lines); diff != "" {
		t.Errorf("app log (-want +got):\n%s", diff)
	}
}

// testCrashLoopAlways: an app that exits 1 at once is restarted with
// backoff: CrashLoopBackOff naming a doubling delay (1s, 2s, 4s with the
// suite's backoff), a climbing restart count, and its last state.
func testCrashLoopAlways(t *testing.T, s *suite) {
	const name = "crash-always"
	s.h.writePod(t, podSpec(name, s.env.shell("app", "exit 1")))
	var reasons, delays transitions
	readyInBackoff := false
	p := s.h.waitFor(t, name, "restart count >= 3, back-off up to 4s", longWait, func(p *corev1.Pod) bool {
		reasons.see(waitingReason(p, "app"))
		if waitingReason(p, "app") == "CrashLoopBackOff" {
			delays.see(backoffDelay(containerStatus(p, "app").State.Waiting.Message))
			if condition(p, corev1.PodReady) == corev1.ConditionTrue {
				readyInBackoff = true
			}
		}
		return restarts(p, "app") >= 3 && delays.has((4 * crashBackoff).String())
	})
	if !reasons.has("CrashLoopBackOff") {
		t.Errorf("waiting reasons seen %v, want CrashLoopBackOff among them", reasons)
	}
	if want := []string{crashBackoff.String(), (2 * crashBackoff).String(), (4 * crashBackoff).String()}; !delays.has(want...) {
		t.Errorf("back-off delays seen %v, want %v in that order", delays, want)
	}
	if readyInBackoff {
		t.Errorf("the pod was Ready while its only container waited in CrashLoopBackOff")
	}
	last := containerStatus(p, "app").LastTerminationState.Terminated
	if last == nil {
		t.Fatalf("no last termination state: %s", describe(p))
	}
	if last.ExitCode != 1 || last.Reason != "Error" {
		t.Errorf("last state terminated %q exit %d, want Error exit 1", last.Reason, last.ExitCode)
	}
	if p.Status.Phase != corev1.PodRunning && p.Status.Phase != corev1.PodPending {
		t.Errorf("phase %s of a crash-looping pod with restartPolicy Always", p.Status.Phase)
	}
}

// backoffDelay is the "4s" of "back-off 4s restarting failed container=...".
func backoffDelay(msg string) string {
	f := strings.Fields(msg)
	if len(f) < 2 || f[0] != "back-off" {
		return ""
	}
	return f[1]
}

// testOnFailureSucceeded: exit 0 under OnFailure is final: phase
// Succeeded, reason Completed, no restart.
func testOnFailureSucceeded(t *testing.T, s *suite) {
	const name = "onfailure-ok"
	pod := podSpec(name, s.env.shell("app", "echo done"))
	pod.Spec.RestartPolicy = corev1.RestartPolicyOnFailure
	testFinished(t, s, pod, corev1.PodSucceeded, 0, "Completed")
}

// testNeverFailed: exit 1 under Never is final: phase Failed, reason
// Error, no restart.
func testNeverFailed(t *testing.T, s *suite) {
	const name = "never-fails"
	pod := podSpec(name, s.env.shell("app", "echo -n goodbye > /dev/termination-log; exit 1"))
	pod.Spec.RestartPolicy = corev1.RestartPolicyNever
	p := testFinished(t, s, pod, corev1.PodFailed, 1, "Error")
	if got := containerStatus(p, "app").State.Terminated.Message; got != "goodbye" {
		t.Errorf("termination message %q, want %q", got, "goodbye")
	}
}

// testFinished runs pod, whose app container must end with code and
// reason and leave the pod in phase for good, and returns its last status.
func testFinished(t *testing.T, s *suite, pod *corev1.Pod, phase corev1.PodPhase, code int32, reason string) *corev1.Pod {
	s.h.writePod(t, pod)
	p := s.h.waitFor(t, pod.Name, "phase "+string(phase), longWait, func(p *corev1.Pod) bool {
		return p != nil && p.Status.Phase == phase
	})
	st := containerStatus(p, "app")
	if st == nil || st.State.Terminated == nil {
		t.Fatalf("app not terminated: %s", describe(p))
	}
	if st.State.Terminated.ExitCode != code || st.State.Terminated.Reason != reason {
		t.Errorf("terminated %q exit %d, want %s exit %d", st.State.Terminated.Reason, st.State.Terminated.ExitCode, reason, code)
	}
	// Several relists and resyncs later, the container is still the only
	// one and was never restarted.
	time.Sleep(4 * time.Second)
	p = s.h.waitFor(t, pod.Name, "still "+string(phase), shortWait, func(p *corev1.Pod) bool { return p != nil })
	if p.Status.Phase != phase || restarts(p, "app") != 0 {
		t.Errorf("later: phase %s restarts %d, want %s and 0", p.Status.Phase, restarts(p, "app"), phase)
	}
	if ctrs := s.env.containers(t, string(p.UID), nil); len(ctrs) != 1 {
		t.Errorf("runtime holds %d containers of the pod, want 1: %v", len(ctrs), ctrs)
	} else if ctrs[0].State != runtimeapi.ContainerState_CONTAINER_EXITED {
		t.Errorf("container state %s, want exited", ctrs[0].State)
	}
	return p
}

// testInitFailure: an init container that fails under restartPolicy
// Never fails the pod; the app container is never created.
func testInitFailure(t *testing.T, s *suite) {
	const name = "init-fails"
	pod := podSpec(name, s.env.shell("app", sleepForever))
	pod.Spec.InitContainers = []corev1.Container{s.env.shell("setup", "exit 3")}
	pod.Spec.RestartPolicy = corev1.RestartPolicyNever
	s.h.writePod(t, pod)
	p := s.h.waitFor(t, name, "phase Failed", longWait, func(p *corev1.Pod) bool {
		return p != nil && p.Status.Phase == corev1.PodFailed
	})
	st := containerStatus(p, "setup")
	if st == nil || st.State.Terminated == nil || st.State.Terminated.ExitCode != 3 {
		t.Errorf("init container: want terminated with exit 3: %s", describe(p))
	}
	if got := condition(p, corev1.PodInitialized); got != corev1.ConditionFalse {
		t.Errorf("Initialized %q, want False", got)
	}
	time.Sleep(3 * time.Second)
	for _, c := range s.env.containers(t, string(p.UID), nil) {
		if c.GetMetadata().GetName() != "setup" {
			t.Errorf("container %s was created although its init container failed", c.GetMetadata().GetName())
		}
	}
	if st := containerStatus(p, "app"); st != nil && (st.State.Running != nil || st.State.Terminated != nil) {
		t.Errorf("app status %+v, want waiting", st.State)
	}
}

// testInitCrashLoop: an init container that fails under restartPolicy
// Always is retried with backoff; the app is never started.
func testInitCrashLoop(t *testing.T, s *suite) {
	const name = "init-crashloop"
	pod := podSpec(name, s.env.shell("app", sleepForever))
	pod.Spec.InitContainers = []corev1.Container{s.env.shell("setup", "exit 1")}
	s.h.writePod(t, pod)
	var reasons transitions
	p := s.h.waitFor(t, name, "init restarted twice", longWait, func(p *corev1.Pod) bool {
		reasons.see(waitingReason(p, "setup"))
		if running(p, "app") {
			t.Fatalf("app runs although its init container keeps failing: %s", describe(p))
		}
		return restarts(p, "setup") >= 2
	})
	if !reasons.has("CrashLoopBackOff") {
		t.Errorf("init container waiting reasons %v, want CrashLoopBackOff", reasons)
	}
	if p.Status.Phase != corev1.PodPending {
		t.Errorf("phase %s, want Pending", p.Status.Phase)
	}
	if got := condition(p, corev1.PodInitialized); got != corev1.ConditionFalse {
		t.Errorf("Initialized %q, want False", got)
	}
	for _, c := range s.env.containers(t, string(p.UID), nil) {
		if c.GetMetadata().GetName() != "setup" {
			t.Errorf("container %s was created although its init container fails", c.GetMetadata().GetName())
		}
	}
}

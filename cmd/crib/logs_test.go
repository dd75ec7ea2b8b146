package main

import (
	"bytes"
	"context"
	"errors"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/containerd/errdefs"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/crib-dev/crib/internal/agent/podconfig"
	"github.com/crib-dev/crib/internal/agent/podstatus"
	"github.com/crib-dev/crib/internal/agent/statusapi"
	"github.com/crib-dev/crib/internal/testutil"
)

// testPod is a pod with the given app and init containers, none of them
// created yet.
func testPod(name string, apps []string, inits ...string) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID("uid-" + name)},
		Spec:       corev1.PodSpec{RestartPolicy: corev1.RestartPolicyAlways},
	}
	for _, n := range apps {
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: n, Image: "busybox"})
	}
	for _, n := range inits {
		p.Spec.InitContainers = append(p.Spec.InitContainers, corev1.Container{Name: n, Image: "busybox"})
	}
	return p
}

// running is the status of a running container in its restarts-th
// instance, with the runtime ID id.
func running(name, id string, restarts int32) corev1.ContainerStatus {
	return corev1.ContainerStatus{
		Name: name, ContainerID: podstatus.ContainerIDScheme + id, RestartCount: restarts,
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}},
	}
}

func exited(name, id string, restarts, code int32) corev1.ContainerStatus {
	return corev1.ContainerStatus{
		Name: name, ContainerID: podstatus.ContainerIDScheme + id, RestartCount: restarts,
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code}},
	}
}

func waiting(name, reason string) corev1.ContainerStatus {
	return corev1.ContainerStatus{Name: name, State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason}}}
}

// statusAPI serves store the way the agent does.
func statusAPI(t *testing.T, store *statusapi.Store) *statusapi.Client {
	t.Helper()
	srv := httptest.NewServer(statusapi.Handler(store, nil, nil))
	t.Cleanup(srv.Close)
	return statusapi.NewClient(srv.URL)
}

// writeLog writes CRI log records to the log file of the container's
// restarts-th instance.
func writeLog(t *testing.T, root string, pod *corev1.Pod, container string, restarts uint32, records ...string) string {
	t.Helper()
	path := filepath.Join(podconfig.PodLogDirectory(root, pod), podconfig.ContainerLogPath(container, restarts))
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(strings.Join(records, "")); err != nil {
		t.Fatal(err)
	}
	return path
}

const (
	ts1 = "2025-03-01T10:00:00.000000001Z"
	ts2 = "2025-03-01T10:00:01.5Z"
	ts3 = "2025-03-01T10:00:02Z"
)

func TestLogs(t *testing.T) {
	root := t.TempDir()
	store := statusapi.NewStore()
	client := statusAPI(t, store)

	web := testPod("web", []string{"app"}, "setup")
	store.Set(web, corev1.PodStatus{
		Phase:                 corev1.PodRunning,
		ContainerStatuses:     []corev1.ContainerStatus{running("app", "aaa", 1)},
		InitContainerStatuses: []corev1.ContainerStatus{exited("setup", "iii", 0, 0)},
	})
	writeLog(t, root, web, "app", 0, ts1+" stdout F before restart\n")
	writeLog(t, root, web, "app", 1,
		ts1+" stdout F one\n",
		ts2+" stderr F oops\n",
		ts2+" stdout P tw\n",
		ts3+" stderr F interleaved\n",
		ts3+" stdout F o\n",
		"not a log line\n",
		ts3+" stdout F three\n",
		ts3+" stdout F \n",
		ts3+" stdout P still\n",
		ts3+" stdout F unfinish", // being written: no newline yet
	)
	writeLog(t, root, web, "setup", 0, ts1+" stdout F initialized\n")

	two := testPod("two", []string{"a", "b"}, "i")
	store.Set(two, corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{running("a", "a1", 0), running("b", "b1", 0)}})
	writeLog(t, root, two, "b", 0, ts1+" stdout F from b\n")

	annotated := testPod("annotated", []string{"a", "b"})
	annotated.Annotations = map[string]string{defaultContainerAnnotation: "b"}
	store.Set(annotated, corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{running("a", "a2", 0), running("b", "b2", 0)}})
	writeLog(t, root, annotated, "b", 0, ts1+" stdout F annotated b\n")

	pending := testPod("pending", []string{"app"})
	store.Set(pending, corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{waiting("app", "ErrImagePull")}})

	fresh := testPod("fresh", []string{"app"})
	store.Set(fresh, corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{running("app", "fff", 0)}})
	writeLog(t, root, fresh, "app", 0)

	noFile := testPod("nofile", []string{"app"})
	store.Set(noFile, corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{running("app", "nnn", 0)}})

	tests := []struct {
		name           string
		o              logsOptions
		stdout, stderr string
		err            error  // class of the error, nil for none
		errHas         string // in the error's text
		// o.tail 0 means all lines unless tailZero says --tail 0.
		tailZero bool
	}{
		{
			name:   "all lines, partial ones joined, streams apart",
			o:      logsOptions{pod: "web"},
			stdout: "one\ntwo\nthree\n\nstill\n",
			stderr: "oops\ninterleaved\n",
		},
		{
			name:   "timestamps of the first part",
			o:      logsOptions{pod: "web", timestamps: true},
			stdout: "2025-03-01T10:00:00.000000001Z one\n2025-03-01T10:00:01.5Z two\n2025-03-01T10:00:02Z three\n2025-03-01T10:00:02Z \n2025-03-01T10:00:02Z still\n",
			stderr: "2025-03-01T10:00:01.5Z oops\n2025-03-01T10:00:02Z interleaved\n",
		},
		{
			name:   "tail counts joined lines of both streams",
			o:      logsOptions{pod: "web", tail: 3},
			stdout: "three\n\nstill\n",
		},
		{
			name:   "tail reaching before the start",
			o:      logsOptions{pod: "web", tail: 100},
			stdout: "one\ntwo\nthree\n\nstill\n",
			stderr: "oops\ninterleaved\n",
		},
		{name: "tail 0", o: logsOptions{pod: "web"}, tailZero: true},
		{name: "previous", o: logsOptions{pod: "web", previous: true}, stdout: "before restart\n"},
		{name: "init container", o: logsOptions{pod: "web", container: "setup"}, stdout: "initialized\n"},
		{name: "chosen of two", o: logsOptions{pod: "two", container: "b"}, stdout: "from b\n"},
		{name: "annotated default", o: logsOptions{pod: "annotated"}, stdout: "annotated b\n"},
		{name: "empty log", o: logsOptions{pod: "fresh"}},
		{
			name: "two containers and no -c", o: logsOptions{pod: "two"},
			err: errdefs.ErrInvalidArgument, errHas: "choose one with -c: a, b; init containers: i",
		},
		{
			name: "no such container", o: logsOptions{pod: "web", container: "nope"},
			err: errdefs.ErrNotFound, errHas: `no container "nope"; its containers: app; init containers: setup`,
		},
		{
			name: "no previous instance", o: logsOptions{pod: "two", container: "a", previous: true},
			err: errdefs.ErrNotFound, errHas: "has no previous instance",
		},
		{
			name: "container not created", o: logsOptions{pod: "pending"},
			err: errdefs.ErrFailedPrecondition, errHas: "is waiting to start: ErrImagePull",
		},
		{name: "no such pod", o: logsOptions{pod: "ghost"}, err: errdefs.ErrNotFound, errHas: "pod default/ghost not found"},
		{name: "no log file", o: logsOptions{pod: "nofile"}, err: os.ErrNotExist, errHas: "--pod-log-root"},
		{name: "other namespace", o: logsOptions{pod: "web", namespace: "kube-system"}, err: errdefs.ErrNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := tt.o
			o.logRoot = root
			if o.namespace == "" {
				o.namespace = "default"
			}
			if o.tail == 0 && !tt.tailZero {
				o.tail = -1
			}
			var stdout, stderr bytes.Buffer
			err := streamLogs(context.Background(), client, o, &stdout, &stderr)
			switch {
			case tt.err == nil && err != nil:
				t.Fatalf("streamLogs: %v", err)
			case tt.err != nil && !errors.Is(err, tt.err):
				t.Fatalf("streamLogs error = %v, want one of class %v", err, tt.err)
			case tt.err != nil && !strings.Contains(err.Error(), tt.errHas):
				t.Fatalf("streamLogs error = %q, want it to say %q", err, tt.errHas)
			}
			if diff := cmp.Diff(tt.stdout, stdout.String()); diff != "" {
				t.Errorf("stdout (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.stderr, stderr.String()); diff != "" {
				t.Errorf("stderr (-want +got):\n%s", diff)
			}
		})
	}
}

// waitFor polls cond until it holds; the follower polls on its own ticks.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// follow runs streamLogs -f in the background; the returned channel
// gives its result.
func follow(t *testing.T, ctx context.Context, client *statusapi.Client, o logsOptions, stdout, stderr *testutil.SyncBuffer) <-chan error {
	t.Helper()
	o.follow, o.namespace = true, "default"
	o.filePoll, o.statusPoll = 5*time.Millisecond, 10*time.Millisecond
	done := make(chan error, 1)
	go func() { done <- streamLogs(ctx, client, o, stdout, stderr) }()
	return done
}

func result(t *testing.T, done <-chan error) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("streamLogs -f did not return")
		return nil
	}
}

func TestLogsFollowAcrossRestarts(t *testing.T) {
	root := t.TempDir()
	store := statusapi.NewStore()
	client := statusAPI(t, store)
	pod := testPod("crashy", []string{"app"})
	pod.Spec.RestartPolicy = corev1.RestartPolicyOnFailure
	store.Set(pod, corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{running("app", "c0", 0)}})
	writeLog(t, root, pod, "app", 0, ts1+" stdout F old 1\n", ts1+" stdout F old 2\n", ts1+" stdout F old 3\n")

	var stdout, stderr testutil.SyncBuffer
	done := follow(t, context.Background(), client, logsOptions{pod: "crashy", logRoot: root, tail: 1}, &stdout, &stderr)
	waitFor(t, "the tail", func() bool { return stdout.String() == "old 3\n" })

	// A record reaches the file in two writes.
	writeLog(t, root, pod, "app", 0, ts2+" stdout P half \n", ts2+" stdout F and")
	writeLog(t, root, pod, "app", 0, " half\n", ts2+" stderr F dying\n", ts2+" stdout P cut off\n")
	waitFor(t, "new lines of instance 0", func() bool { return strings.HasSuffix(stdout.String(), "half and half\n") })

	// It failed and waits for its restart: nothing changes for the reader.
	st := exited("app", "c0", 0, 1)
	st.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}
	store.Set(pod, corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{st}})
	// Instance 1 starts: the reader finishes instance 0 and moves on.
	store.Set(pod, corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{running("app", "c1", 1)}})
	writeLog(t, root, pod, "app", 1, ts3+" stdout F new 1\n")
	waitFor(t, "instance 1's line", func() bool { return strings.HasSuffix(stdout.String(), "new 1\n") })

	// Instance 1 succeeds: OnFailure does not restart it, following ends.
	writeLog(t, root, pod, "app", 1, ts3+" stdout F bye\n")
	store.Set(pod, corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{exited("app", "c1", 1, 0)}})
	if err := result(t, done); err != nil {
		t.Fatalf("streamLogs -f: %v", err)
	}
	if diff := cmp.Diff("old 3\nhalf and half\ncut off\nnew 1\nbye\n", stdout.String()); diff != "" {
		t.Errorf("stdout (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff("dying\n", stderr.String()); diff != "" {
		t.Errorf("stderr (-want +got):\n%s", diff)
	}
}

func TestLogsFollowEnds(t *testing.T) {
	tests := []struct {
		name string
		// end changes the world so that following stops; nil: the
		// context is cancelled.
		end func(store *statusapi.Store, pod *corev1.Pod)
	}{
		{name: "interrupted"},
		{name: "pod gone", end: func(store *statusapi.Store, pod *corev1.Pod) { store.Delete(pod.UID) }},
		{name: "pod finished", end: func(store *statusapi.Store, pod *corev1.Pod) {
			store.Set(pod, corev1.PodStatus{Phase: corev1.PodFailed, ContainerStatuses: []corev1.ContainerStatus{exited("app", "c0", 0, 2)}})
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			store := statusapi.NewStore()
			client := statusAPI(t, store)
			pod := testPod("p", []string{"app"})
			store.Set(pod, corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{running("app", "c0", 0)}})
			writeLog(t, root, pod, "app", 0, ts1+" stdout F first\n")
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var stdout, stderr testutil.SyncBuffer
			done := follow(t, ctx, client, logsOptions{pod: "p", logRoot: root, tail: -1}, &stdout, &stderr)
			waitFor(t, "the first line", func() bool { return stdout.String() == "first\n" })
			writeLog(t, root, pod, "app", 0, ts2+" stdout F last\n")
			waitFor(t, "the last line", func() bool { return stdout.String() == "first\nlast\n" })
			if tt.end == nil {
				cancel()
			} else {
				tt.end(store, pod)
			}
			if err := result(t, done); err != nil {
				t.Fatalf("streamLogs -f: %v", err)
			}
		})
	}
}

func TestLogsCommandLine(t *testing.T) {
	root := t.TempDir()
	store := statusapi.NewStore()
	srv := httptest.NewServer(statusapi.Handler(store, nil, nil))
	t.Cleanup(srv.Close)
	addr := strings.TrimPrefix(srv.URL, "http://")
	pod := testPod("web", []string{"app", "side"})
	pod.Namespace = "prod"
	store.Set(pod, corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{running("app", "a", 0), running("side", "s", 0)}})
	writeLog(t, root, pod, "side", 0, ts1+" stdout F 1\n", ts1+" stdout F 2\n", ts1+" stderr F 3\n")

	tests := []struct {
		args           []string
		code           int
		stdout, stderr string
	}{
		{
			args: []string{"logs", "-n", "prod", "web", "-c", "side", "--tail", "2", "--timestamps", "--pod-log-root", root, "--status-address", addr},
			code: 0, stdout: ts1 + " 2\n", stderr: ts1 + " 3\n",
		},
		{args: []string{"logs", "--status-address", addr, "--pod-log-root", root, "-n", "prod", "--", "web", "-c", "side"}, code: 2},
		{args: []string{"logs", "--status-address", addr, "-n", "prod", "web"}, code: 1, stderr: "crib logs: pod prod/web has 2 containers, choose one with -c: app, side: invalid argument\n"},
		{args: []string{"logs", "-f", "--previous", "web"}, code: 2, stderr: "crib logs: -f and --previous do not go together: the previous instance has ended\n"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(tt.args, &stdout, &stderr)
			if code != tt.code {
				t.Fatalf("exit code %d, want %d; stderr:\n%s", code, tt.code, stderr.String())
			}
			if code == 2 && tt.stderr == "" {
				if !strings.Contains(stderr.String(), "usage: crib logs") {
					t.Errorf("stderr = %q, want the usage", stderr.String())
				}
				return
			}
			if diff := cmp.Diff(tt.stdout, stdout.String()); diff != "" {
				t.Errorf("stdout (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.stderr, stderr.String()); diff != "" {
				t.Errorf("stderr (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRunLogFollower checks `crib run`'s log follower, which shares the
// CRI line joining.
func TestRunLogFollower(t *testing.T) {
	root := t.TempDir()
	pod := testPod("web", []string{"app"})
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{running("app", "a", 0)}
	writeLog(t, root, pod, "app", 0, ts1+" stdout P a\n", ts1+" stderr F e\n", ts1+" stdout F b\n", ts1+" stdout F c")
	var stdout, stderr bytes.Buffer
	f := newLogFollower(root, &stdout, &stderr, true)
	f.poll([]corev1.Pod{*pod})
	writeLog(t, root, pod, "app", 0, "d\n")
	f.poll(nil)
	if stdout.String() != "web/app | ab\nweb/app | cd\n" || stderr.String() != "web/app | e\n" {
		t.Errorf("crib run printed %q / %q", stdout.String(), stderr.String())
	}
}

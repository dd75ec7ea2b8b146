package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crib-dev/crib/internal/agent/podconfig"
)

// A container's unfinished last line (a partial record, as the monitor
// writes output that ends without a newline) is printed once the container
// has ended or been replaced by a newer instance, or when the pods are gone;
// never twice, and never while the container runs.
func TestLogFollowerPrintsUnfinishedLastLines(t *testing.T) {
	root := t.TempDir()
	pod := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", UID: "u"}}
	dir := podconfig.PodLogDirectory(root, &pod)
	write := func(name string, restart uint32, records string) {
		t.Helper()
		path := filepath.Join(dir, podconfig.ContainerLogPath(name, restart))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(records), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	const ts = "2026-11-27T22:00:00.000000000Z"
	write("a", 0, ts+" stdout F one\n"+ts+" stdout P DO\n"+ts+" stdout P NE\n")
	write("b", 0, ts+" stdout P first-instance-end\n")
	write("b", 1, ts+" stderr F second\n"+ts+" stdout P still-running\n")
	status := func(name string, restart int32, terminated bool) corev1.ContainerStatus {
		cs := corev1.ContainerStatus{Name: name, ContainerID: "crib://" + name, RestartCount: restart}
		if terminated {
			cs.State.Terminated = &corev1.ContainerStateTerminated{}
		} else {
			cs.State.Running = &corev1.ContainerStateRunning{}
		}
		return cs
	}
	var stdout, stderr bytes.Buffer
	f := newLogFollower(root, &stdout, &stderr, false)
	check := func(step, wantOut, wantErr string) {
		t.Helper()
		if stdout.String() != wantOut || stderr.String() != wantErr {
			t.Errorf("%s: stdout %q, stderr %q; want %q, %q", step, stdout.String(), stderr.String(), wantOut, wantErr)
		}
	}

	// b's first instance is followed while it runs: nothing of its
	// unfinished line yet.
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{status("a", 0, false), status("b", 0, false)}
	f.poll([]corev1.Pod{pod})
	check("running", "a | one\n", "")

	// b restarted: its first instance's last line is printed, the second's
	// waits; a ended: its last line, joined, is printed.
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{status("a", 0, true), status("b", 1, false)}
	f.poll([]corev1.Pod{pod})
	f.poll([]corev1.Pod{pod})
	check("a ended, b restarted", "a | one\na | DONE\nb | first-instance-end\n", "b | second\n")

	// The pods are gone: every file's last line, once.
	f.poll(nil)
	f.poll(nil)
	check("pods gone", "a | one\na | DONE\nb | first-instance-end\nb | still-running\n", "b | second\n")
}

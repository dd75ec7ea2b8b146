package agenttest

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Shell snippets for busybox containers.
const (
	// sleepForever keeps a container running and lets it exit at once on
	// SIGTERM (a shell as PID 1 otherwise ignores it until the grace period
	// ends).
	sleepForever = "trap 'exit 0' TERM; while true; do sleep 1; done"
)

// podSpec returns a pod named name running containers, with a short grace
// period so that teardown is quick.
func podSpec(name string, containers ...corev1.Container) *corev1.Pod {
	grace := int64(3)
	return &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{
			Containers:                    containers,
			TerminationGracePeriodSeconds: &grace,
		},
	}
}

// shell is a busybox container running script with sh -c; the image is
// never pulled.
func (e *runtimeEnv) shell(name, script string) corev1.Container {
	return corev1.Container{
		Name:            name,
		Image:           e.image,
		ImagePullPolicy: corev1.PullIfNotPresent,
		Command:         []string{"sh", "-c", script},
	}
}

func execAction(cmd ...string) *corev1.ExecAction { return &corev1.ExecAction{Command: cmd} }

// Predicates over a pod from the store.

func condition(p *corev1.Pod, typ corev1.PodConditionType) corev1.ConditionStatus {
	if p == nil {
		return ""
	}
	for _, c := range p.Status.Conditions {
		if c.Type == typ {
			return c.Status
		}
	}
	return ""
}

func containerStatus(p *corev1.Pod, name string) *corev1.ContainerStatus {
	if p == nil {
		return nil
	}
	for _, list := range [][]corev1.ContainerStatus{p.Status.ContainerStatuses, p.Status.InitContainerStatuses} {
		for i := range list {
			if list[i].Name == name {
				return &list[i]
			}
		}
	}
	return nil
}

// running reports whether container name of p runs.
func running(p *corev1.Pod, name string) bool {
	s := containerStatus(p, name)
	return s != nil && s.State.Running != nil
}

func waitingReason(p *corev1.Pod, name string) string {
	s := containerStatus(p, name)
	if s == nil || s.State.Waiting == nil {
		return ""
	}
	return s.State.Waiting.Reason
}

func restarts(p *corev1.Pod, name string) int32 {
	if s := containerStatus(p, name); s != nil {
		return s.RestartCount
	}
	return 0
}

// podLogDir is the kubelet's log directory of a pod under root.
func podLogDir(root string, p *corev1.Pod) string {
	return filepath.Join(root, p.Namespace+"_"+p.Name+"_"+string(p.UID))
}

// readCRILog returns the messages of a CRI-format log file
// ("<time> <stream> <P|F> <message>"), partial lines joined.
func readCRILog(path string) ([]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []string
	var partial strings.Builder
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		fields := strings.SplitN(sc.Text(), " ", 4)
		if len(fields) < 3 {
			continue
		}
		msg := ""
		if len(fields) == 4 {
			msg = fields[3]
		}
		partial.WriteString(msg)
		if fields[2] == "F" {
			out = append(out, partial.String())
			partial.Reset()
		}
	}
	return out, nil
}

// containerLogs are the log files of container name of p, by restart
// count, lowest first.
func containerLogs(root string, p *corev1.Pod, name string) []string {
	matches, _ := filepath.Glob(filepath.Join(podLogDir(root, p), name, "*.log"))
	n := func(s string) int {
		i, _ := strconv.Atoi(strings.TrimSuffix(filepath.Base(s), ".log"))
		return i
	}
	sort.Slice(matches, func(i, j int) bool { return n(matches[i]) < n(matches[j]) })
	return matches
}

// waitLog polls a CRI log file until cond accepts its messages.
func waitLog(t testing.TB, path string, what string, cond func([]string) bool) []string {
	t.Helper()
	deadline := time.Now().Add(shortWait)
	for {
		lines, err := readCRILog(path)
		if err == nil && cond(lines) {
			return lines
		}
		if time.Now().After(deadline) {
			t.Fatalf("log %s: %s: not within %s; has %q (err %v)", path, what, shortWait, lines, err)
		}
		time.Sleep(pollEvery)
	}
}

func contains(lines []string, s string) bool {
	for _, l := range lines {
		if l == s {
			return true
		}
	}
	return false
}

// transitions records the distinct successive values a pod field takes.
type transitions []string

func (tr *transitions) see(v string) {
	if v == "" {
		return
	}
	if n := len(*tr); n == 0 || (*tr)[n-1] != v {
		*tr = append(*tr, v)
	}
}

// has reports whether want appears in tr in order (not necessarily
// adjacent).
func (tr transitions) has(want ...string) bool {
	i := 0
	for _, v := range tr {
		if i < len(want) && v == want[i] {
			i++
		}
	}
	return i == len(want)
}

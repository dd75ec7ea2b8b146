package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/containerd/errdefs"
	corev1 "k8s.io/api/core/v1"

	"github.com/crib-dev/crib/internal/agent/podconfig"
	"github.com/crib-dev/crib/internal/agent/statusapi"
	"github.com/crib-dev/crib/internal/monitor"
)

const logsUsage = `usage: crib logs [flags] POD

Print the log of one container of an agent's pod, as kubectl logs does.
The pod is found through the agent's status API; the log is read from
<pod-log-root>/<namespace>_<pod>_<uid>/<container>/<restarts>.log.

Without -c, the container is the one the annotation
kubectl.kubernetes.io/default-container names, else the pod's only app
container; a pod with several needs -c.

With -f the log is followed until Ctrl-C, or until the container has
ended for good or the pod is gone. Unlike kubectl, following does not stop
when the container restarts: crib logs -f moves on to the new instance's
log, so one command watches a crash-looping container.

Lines written in several parts (P) are printed joined; --tail counts
joined lines; --timestamps prints the time of a line's first part.

Flags:
`

// logsOptions is what `crib logs` was asked for.
type logsOptions struct {
	namespace, pod, container string
	follow, previous          bool
	timestamps                bool
	tail                      int // lines from the end; negative: all
	logRoot                   string
	// filePoll is how often a followed file is read; statusPoll how often
	// the status API is asked whether the container restarted.
	filePoll, statusPoll time.Duration
}

// podGetter is the part of the status API client logs and exec use.
type podGetter interface {
	Pod(ctx context.Context, namespace, name string) (*corev1.Pod, error)
}

func logsCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("crib logs", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, logsUsage)
		fs.PrintDefaults()
	}
	o := logsOptions{filePoll: 250 * time.Millisecond, statusPoll: time.Second}
	fs.StringVar(&o.container, "c", "", "container name (default: see above)")
	fs.BoolVar(&o.follow, "f", false, "follow the log, across restarts of the container")
	fs.BoolVar(&o.previous, "previous", false, "print the log of the container's previous instance")
	fs.BoolVar(&o.timestamps, "timestamps", false, "prefix each line with its RFC 3339 time")
	fs.IntVar(&o.tail, "tail", -1, "print only the last N lines (-1: all)")
	fs.StringVar(&o.logRoot, "pod-log-root", "/var/log/pods", "where the agent writes container logs")
	fs.StringVar(&o.namespace, "n", "default", "the pod's namespace")
	addr := fs.String("status-address", "127.0.0.1:10255", "address of the agent's status API")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return 2
	}
	if len(pos) != 1 {
		fs.Usage()
		return 2
	}
	o.pod = pos[0]
	if o.follow && o.previous {
		fmt.Fprintln(stderr, "crib logs: -f and --previous do not go together: the previous instance has ended")
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	client := statusapi.NewClient("http://" + *addr)
	if err := streamLogs(ctx, client, o, stdout, stderr); err != nil {
		fmt.Fprintf(stderr, "crib logs: %v\n", err)
		return 1
	}
	return 0
}

// streamLogs prints the log o asks for. Following ends without an error
// when ctx is done.
func streamLogs(ctx context.Context, pods podGetter, o logsOptions, stdout, stderr io.Writer) error {
	pod, err := getPod(ctx, pods, o.namespace, o.pod)
	if err != nil {
		return err
	}
	name, err := selectContainer(pod, o.container)
	if err != nil {
		return err
	}
	path, err := containerLogFile(o.logRoot, pod, name, o.previous)
	if err != nil {
		return err
	}
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("open log of container %q: %w (is --pod-log-root %s the agent's?)", name, err, o.logRoot)
	}
	out := &logPrinter{stdout: stdout, stderr: stderr, timestamps: o.timestamps}
	// file is nil while the current instance's log is not there yet.
	file, cur := f, monitor.NewLogReader(f)
	defer func() {
		if file != nil {
			file.Close()
		}
	}()

	// The tail is whatever is in the file now; what comes later is
	// printed as it comes.
	lines := cur.ReadAvailable()
	if !o.follow {
		lines = append(lines, cur.Flush()...)
	}
	if o.tail >= 0 && len(lines) > o.tail {
		lines = lines[len(lines)-o.tail:]
	}
	out.print(lines)
	if !o.follow {
		return nil
	}

	fileTick := time.NewTicker(o.filePoll)
	defer fileTick.Stop()
	statusTick := time.NewTicker(o.statusPoll)
	defer statusTick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-fileTick.C:
			if file == nil {
				if f, err := os.Open(path); err == nil {
					file, cur = f, monitor.NewLogReader(f)
				}
			}
			out.print(cur.ReadAvailable())
		case <-statusTick.C:
			pod, err := pods.Pod(ctx, o.namespace, o.pod)
			switch {
			case errors.Is(err, errdefs.ErrNotFound):
				out.print(cur.Drain())
				return nil
			case err != nil:
				// The agent may be restarting; its pods keep running
				// and writing, so keep reading.
				continue
			}
			next, err := containerLogFile(o.logRoot, pod, name, false)
			if err != nil {
				continue // the container is not there (yet)
			}
			if next != path {
				// A new instance (or a new pod of that name): finish
				// the old file, then read the new one from its start.
				out.print(cur.Drain())
				if file != nil {
					file.Close()
				}
				path, file, cur = next, nil, &monitor.LogReader{}
				if f, err := os.Open(path); err == nil {
					file, cur = f, monitor.NewLogReader(f)
				}
				continue
			}
			if containerEnded(pod, name) {
				out.print(cur.Drain())
				return nil
			}
		}
	}
}

// getPod asks the agent for namespace/name.
func getPod(ctx context.Context, pods podGetter, namespace, name string) (*corev1.Pod, error) {
	pod, err := pods.Pod(ctx, namespace, name)
	if errors.Is(err, errdefs.ErrNotFound) {
		return nil, fmt.Errorf("pod %s/%s not found: %w", namespace, name, errdefs.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("ask the agent for pod %s/%s (is `crib agent` or `crib run` running?): %w", namespace, name, err)
	}
	return pod, nil
}

// defaultContainerAnnotation names the container kubectl picks when none is
// given.
const defaultContainerAnnotation = "kubectl.kubernetes.io/default-container"

// selectContainer returns the container name: want when the pod has such a
// container (init containers included), else the annotated default, else
// the only app container. Anything else is an error naming the choices.
func selectContainer(pod *corev1.Pod, want string) (string, error) {
	var apps, inits []string
	for _, c := range pod.Spec.Containers {
		apps = append(apps, c.Name)
	}
	for _, c := range pod.Spec.InitContainers {
		inits = append(inits, c.Name)
	}
	has := func(name string) bool {
		for _, n := range append(apps[:len(apps):len(apps)], inits...) {
			if n == name {
				return true
			}
		}
		return false
	}
	choices := func() string {
		s := strings.Join(apps, ", ")
		if len(inits) > 0 {
			s += "; init containers: " + strings.Join(inits, ", ")
		}
		return s
	}
	podName := pod.Namespace + "/" + pod.Name
	switch {
	case want != "" && has(want):
		return want, nil
	case want != "":
		return "", fmt.Errorf("pod %s has no container %q; its containers: %s: %w", podName, want, choices(), errdefs.ErrNotFound)
	}
	if def := pod.Annotations[defaultContainerAnnotation]; def != "" && has(def) {
		return def, nil
	}
	if len(apps) == 1 {
		return apps[0], nil
	}
	if len(apps) == 0 {
		return "", fmt.Errorf("pod %s has no containers: %w", podName, errdefs.ErrNotFound)
	}
	return "", fmt.Errorf("pod %s has %d containers, choose one with -c: %s: %w", podName, len(apps), choices(), errdefs.ErrInvalidArgument)
}

// containerStatus returns the status of the pod's container name; nil when
// the agent reports none.
func containerStatus(pod *corev1.Pod, name string) *corev1.ContainerStatus {
	for _, list := range [][]corev1.ContainerStatus{pod.Status.ContainerStatuses, pod.Status.InitContainerStatuses} {
		for i := range list {
			if list[i].Name == name {
				return &list[i]
			}
		}
	}
	return nil
}

// startedStatus returns the status of a container the runtime has created,
// or an error saying why there is none.
func startedStatus(pod *corev1.Pod, name string) (*corev1.ContainerStatus, error) {
	cs := containerStatus(pod, name)
	if cs == nil || cs.ContainerID == "" {
		why := "has not been created"
		if cs != nil && cs.State.Waiting != nil && cs.State.Waiting.Reason != "" {
			why = "is waiting to start: " + cs.State.Waiting.Reason
		}
		return nil, fmt.Errorf("container %q in pod %s/%s %s: %w", name, pod.Namespace, pod.Name, why, errdefs.ErrFailedPrecondition)
	}
	return cs, nil
}

// containerLogFile is the log file of the container's current instance,
// or of the one before it.
func containerLogFile(root string, pod *corev1.Pod, name string, previous bool) (string, error) {
	cs, err := startedStatus(pod, name)
	if err != nil {
		return "", err
	}
	n := cs.RestartCount
	if previous {
		if n == 0 {
			return "", fmt.Errorf("container %q in pod %s/%s has no previous instance: it never restarted: %w",
				name, pod.Namespace, pod.Name, errdefs.ErrNotFound)
		}
		n--
	}
	return filepath.Join(podconfig.PodLogDirectory(root, pod), podconfig.ContainerLogPath(name, uint32(n))), nil
}

// containerEnded reports a container that will write no more: its pod has
// finished, or it terminated and its restart policy does not bring it back.
func containerEnded(pod *corev1.Pod, name string) bool {
	if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return true
	}
	cs := containerStatus(pod, name)
	if cs == nil || cs.State.Terminated == nil {
		return false
	}
	code := cs.State.Terminated.ExitCode
	for _, c := range pod.Spec.InitContainers {
		if c.Name == name {
			if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
				return false // a sidecar
			}
			return code == 0 || pod.Spec.RestartPolicy == corev1.RestartPolicyNever
		}
	}
	switch pod.Spec.RestartPolicy {
	case corev1.RestartPolicyNever:
		return true
	case corev1.RestartPolicyOnFailure:
		return code == 0
	default:
		return false
	}
}

// logPrinter writes log lines to the stream they came from.
type logPrinter struct {
	stdout, stderr io.Writer
	timestamps     bool
}

func (p *logPrinter) print(lines []monitor.LogLine) {
	for _, l := range lines {
		w := p.stdout
		if l.Stream == monitor.StreamStderr {
			w = p.stderr
		}
		if p.timestamps {
			fmt.Fprintf(w, "%s %s\n", l.Time.Format(time.RFC3339Nano), l.Text)
		} else {
			fmt.Fprintf(w, "%s\n", l.Text)
		}
	}
}

// parseInterspersed parses flags given before and after the positional
// arguments, as kubectl takes them, and returns the positional ones. A
// "--" ends the flags; what follows it is positional.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		// fs.Parse consumed a "--" when one precedes rest.
		if n := len(args) - len(rest); n > 0 && args[n-1] == "--" {
			return append(pos, rest...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

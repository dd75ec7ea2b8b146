package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/containerd/errdefs"
	corev1 "k8s.io/api/core/v1"
	remote "k8s.io/cri-client/pkg"
	utilexec "k8s.io/utils/exec"

	"github.com/crib-dev/crib/internal/agent/statusapi"
)

const execUsage = `usage: crib exec [flags] POD -- COMMAND [ARGS...]

Run a command in a container of an agent's pod, as kubectl exec does,
print its output and exit with its exit code. The container is found
through the agent's status API and chosen as crib logs chooses it; the
command runs through the CRI runtime's ExecSync.

There is no interactive mode (-it): a terminal needs the CRI streaming
protocol, which this command does not speak. For a shell, use
crictl --runtime-endpoint unix:///run/crib/crib.sock exec -it CONTAINER sh
with the container ID that crib ps prints.

Flags:
`

// execOptions is what `crib exec` was asked for.
type execOptions struct {
	podTarget
	timeout time.Duration
	cmd     []string
}

// execRunner is the part of the CRI runtime client exec uses.
type execRunner interface {
	ExecSync(ctx context.Context, containerID string, cmd []string, timeout time.Duration) (stdout, stderr []byte, err error)
}

// parseExecArgs reads `crib exec`'s command line. Flags go before "--", in
// any order with POD; without "--", the first argument after POD starts
// the command.
func parseExecArgs(args []string, stderr io.Writer) (execOptions, *flag.FlagSet, error) {
	fs := flag.NewFlagSet("crib exec", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, execUsage)
		fs.PrintDefaults()
	}
	var o execOptions
	o.podTarget.addFlags(fs)
	fs.DurationVar(&o.timeout, "timeout", 0, "stop the command after this long, e.g. 30s (0: no limit)")

	var pos []string
	if i := slices.Index(args, "--"); i >= 0 {
		var err error
		if pos, err = parseInterspersed(fs, args[:i]); err != nil {
			return o, fs, err
		}
		if len(pos) != 1 {
			fs.Usage()
			return o, fs, fmt.Errorf("want one POD before --, got %d arguments: %w", len(pos), errdefs.ErrInvalidArgument)
		}
		o.pod, o.cmd = pos[0], args[i+1:]
	} else {
		if err := fs.Parse(args); err != nil {
			return o, fs, err
		}
		if fs.NArg() > 0 {
			o.pod, o.cmd = fs.Arg(0), fs.Args()[1:]
		}
	}
	if o.pod == "" || len(o.cmd) == 0 {
		fs.Usage()
		return o, fs, fmt.Errorf("want POD -- COMMAND: %w", errdefs.ErrInvalidArgument)
	}
	if o.timeout < 0 {
		return o, fs, fmt.Errorf("--timeout %s is negative: %w", o.timeout, errdefs.ErrInvalidArgument)
	}
	return o, fs, nil
}

func execCmd(args []string, stdout, stderr io.Writer) int {
	o, fs, err := parseExecArgs(args, stderr)
	if err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintf(stderr, "crib exec: %v\n", err)
		}
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	id, err := execTarget(ctx, statusapi.NewClient("http://"+o.statusAddr), o)
	if err != nil {
		fmt.Fprintf(stderr, "crib exec: %v\n", err)
		return 1
	}
	rt, _, err := dialRuntime(ctx, fs, o.endpoint, o.cfgPath, o.overrides)
	if err != nil {
		fmt.Fprintf(stderr, "crib exec: %v\n", err)
		return 1
	}
	code, err := runExec(ctx, rt, id, o.cmd, o.timeout, stdout, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "crib exec: %v\n", err)
	}
	return code
}

// execTarget returns the runtime's ID of the container o names.
func execTarget(ctx context.Context, pods podGetter, o execOptions) (string, error) {
	pod, err := getPod(ctx, pods, o.namespace, o.pod)
	if err != nil {
		return "", err
	}
	name, err := selectContainer(pod, o.container)
	if err != nil {
		return "", err
	}
	return runningID(pod, name)
}

// runningID returns the runtime's ID of the pod's container name, which
// must be running.
func runningID(pod *corev1.Pod, name string) (string, error) {
	cs, err := startedStatus(pod, name)
	if err != nil {
		return "", err
	}
	if cs.State.Running == nil {
		return "", fmt.Errorf("container %q in pod %s/%s is not running: %w", name, pod.Namespace, pod.Name, errdefs.ErrFailedPrecondition)
	}
	_, id, ok := strings.Cut(cs.ContainerID, "://")
	if !ok || id == "" {
		return "", fmt.Errorf("container %q in pod %s/%s has a malformed ID %q: %w", name, pod.Namespace, pod.Name, cs.ContainerID, errdefs.ErrInvalidArgument)
	}
	return id, nil
}

// runExec runs cmd in container id, copies its output and returns the exit
// code crib exec should leave with: the command's own, or 1 when it could
// not be run (with the error saying why).
func runExec(ctx context.Context, rt execRunner, id string, cmd []string, timeout time.Duration, stdout, stderr io.Writer) (int, error) {
	// The CRI counts whole seconds; a part of one still limits.
	if rem := timeout % time.Second; rem != 0 {
		timeout += time.Second - rem
	}
	out, errOut, err := rt.ExecSync(ctx, id, cmd, timeout)
	_, _ = stdout.Write(out)
	_, _ = stderr.Write(errOut)
	var exit utilexec.ExitError
	switch {
	case err == nil:
		return 0, nil
	case errors.As(err, &exit):
		return exit.ExitStatus(), nil
	case errors.Is(err, remote.ErrCommandTimedOut):
		return 1, fmt.Errorf("run %q in container %s: timed out after %s", strings.Join(cmd, " "), statusapi.ShortID(id), timeout)
	default:
		return 1, fmt.Errorf("run %q in container %s: %w", strings.Join(cmd, " "), statusapi.ShortID(id), err)
	}
}

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
	"syscall"
	"time"

	"github.com/containerd/errdefs"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/crib-dev/crib/internal/agent/statusapi"
)

const checkpointUsage = `usage: crib checkpoint [flags] POD

Write a checkpoint archive of a running container of an agent's pod, as
the kubelet's POST /checkpoint/{namespace}/{pod}/{container} does, and
print its path. The container keeps running. The container is found
through the agent's status API and chosen as crib logs chooses it; the
runtime writes the archive (CheckpointContainer over the CRI), so it
needs CRIU.

The archive is named as the kubelet names it,
checkpoint-<pod>_<namespace>-<container>-<RFC 3339 time>.tar, in the
current directory unless -o says otherwise. A pod whose image is the
archive's absolute path is restored from it: it goes on from where the
container was.

Flags:
`

// checkpointOptions is what `crib checkpoint` was asked for.
type checkpointOptions struct {
	podTarget
	output  string
	timeout time.Duration
}

// checkpointer is the part of the CRI runtime client checkpoint uses.
type checkpointer interface {
	CheckpointContainer(ctx context.Context, req *runtimeapi.CheckpointContainerRequest) error
}

func parseCheckpointArgs(args []string, stderr io.Writer) (checkpointOptions, *flag.FlagSet, error) {
	fs := flag.NewFlagSet("crib checkpoint", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, checkpointUsage)
		fs.PrintDefaults()
	}
	var o checkpointOptions
	o.podTarget.addFlags(fs)
	fs.StringVar(&o.output, "o", "", "the archive to write (default: checkpoint-<pod>_<namespace>-<container>-<time>.tar here)")
	fs.DurationVar(&o.timeout, "timeout", 0, "give the checkpoint this long, e.g. 2m (0: the runtime's default)")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return o, fs, err
	}
	if len(pos) != 1 {
		fs.Usage()
		return o, fs, fmt.Errorf("want one POD, got %d arguments: %w", len(pos), errdefs.ErrInvalidArgument)
	}
	o.pod = pos[0]
	if o.timeout < 0 {
		return o, fs, fmt.Errorf("--timeout %s is negative: %w", o.timeout, errdefs.ErrInvalidArgument)
	}
	return o, fs, nil
}

func checkpointCmd(args []string, stdout, stderr io.Writer) int {
	o, fs, err := parseCheckpointArgs(args, stderr)
	if err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintf(stderr, "crib checkpoint: %v\n", err)
		}
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	name, id, err := checkpointTarget(ctx, statusapi.NewClient("http://"+o.statusAddr), o)
	if err != nil {
		fmt.Fprintf(stderr, "crib checkpoint: %v\n", err)
		return 1
	}
	out, err := archivePath(o.output, o.pod, o.namespace, name, time.Now())
	if err != nil {
		fmt.Fprintf(stderr, "crib checkpoint: %v\n", err)
		return 1
	}
	rt, _, err := dialRuntime(ctx, fs, o.endpoint, o.cfgPath, o.overrides)
	if err != nil {
		fmt.Fprintf(stderr, "crib checkpoint: %v\n", err)
		return 1
	}
	if err := runCheckpoint(ctx, rt, id, out, o.timeout); err != nil {
		fmt.Fprintf(stderr, "crib checkpoint: container %q of pod %s/%s: %v\n", name, o.namespace, o.pod, err)
		return 1
	}
	fmt.Fprintln(stdout, out)
	return 0
}

// checkpointTarget returns the name and runtime ID of the running
// container o names.
func checkpointTarget(ctx context.Context, pods podGetter, o checkpointOptions) (name, id string, err error) {
	pod, err := getPod(ctx, pods, o.namespace, o.pod)
	if err != nil {
		return "", "", err
	}
	if name, err = selectContainer(pod, o.container); err != nil {
		return "", "", err
	}
	id, err = runningID(pod, name)
	return name, id, err
}

// archivePath is the absolute path of the archive to write: out, or the
// kubelet's name for it in the current directory. Its directory must
// exist and nothing may be at the path yet: the runtime would replace it.
func archivePath(out, pod, namespace, container string, now time.Time) (string, error) {
	if out == "" {
		// The kubelet's name (pkg/kubelet: checkpoint-<pod full name>-
		// <container>-<RFC 3339 time>.tar, the full name being
		// <name>_<namespace>).
		out = fmt.Sprintf("checkpoint-%s_%s-%s-%s.tar", pod, namespace, container, now.Format(time.RFC3339))
	}
	abs, err := filepath.Abs(out)
	if err != nil {
		return "", fmt.Errorf("-o %s: %w", out, err)
	}
	dir := filepath.Dir(abs)
	fi, err := os.Stat(dir)
	switch {
	case err != nil:
		return "", fmt.Errorf("-o %s: its directory: %w", out, err)
	case !fi.IsDir():
		return "", fmt.Errorf("-o %s: %s is not a directory: %w", out, dir, errdefs.ErrInvalidArgument)
	}
	if fi, err := os.Lstat(abs); err == nil {
		what := "a file"
		if fi.IsDir() {
			what = "a directory"
		}
		return "", fmt.Errorf("-o %s: %s is there already (remove it, or name another path): %w", out, what, errdefs.ErrAlreadyExists)
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("-o %s: %w", out, err)
	}
	return abs, nil
}

// runCheckpoint asks the runtime for the archive, and says in the words of
// this command what a refusal means.
func runCheckpoint(ctx context.Context, rt checkpointer, id, out string, timeout time.Duration) error {
	// The CRI counts whole seconds; a part of one still gives time.
	secs := int64((timeout + time.Second - 1) / time.Second)
	err := rt.CheckpointContainer(ctx, &runtimeapi.CheckpointContainerRequest{ContainerId: id, Location: out, Timeout: secs})
	if err == nil {
		return nil
	}
	st, _ := status.FromError(err)
	switch st.Code() {
	case codes.FailedPrecondition:
		return fmt.Errorf("the runtime cannot checkpoint it: %s", st.Message())
	case codes.Unimplemented:
		return fmt.Errorf("the runtime does not checkpoint containers: %s", st.Message())
	case codes.NotFound:
		return fmt.Errorf("the runtime has no container %s (it went since the agent's status): %s", statusapi.ShortID(id), st.Message())
	case codes.DeadlineExceeded:
		return fmt.Errorf("the checkpoint took longer than allowed (--timeout): %s", st.Message())
	case codes.Unknown:
		return fmt.Errorf("checkpoint to %s: %s", out, st.Message())
	default:
		return fmt.Errorf("checkpoint to %s: %s (%s)", out, st.Message(), st.Code())
	}
}

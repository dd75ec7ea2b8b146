package ocispec

import (
	"fmt"
	"strings"

	"github.com/containerd/errdefs"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// DefaultPath is the PATH a container gets when neither the image nor the CRI
// config sets one.
const DefaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// process fills args, env, cwd and the terminal flag.
func (b *builder) process() error {
	c := b.in.Container
	args, err := Args(b.in.Image.Entrypoint, b.in.Image.Cmd, c.GetCommand(), c.GetArgs())
	if err != nil {
		return err
	}
	p := b.spec.Process
	p.Args = args
	p.Env = Env(b.hostnameEnv(), b.in.Image.Env, c.GetEnvs())
	p.Cwd = workingDir(c.GetWorkingDir(), b.in.Image.WorkingDir)
	p.Terminal = c.GetTty()
	return nil
}

// Args combines the image's Entrypoint and Cmd with the CRI command and args
// the way Kubernetes documents it: a CRI command replaces the Entrypoint and
// drops the image Cmd; CRI args replace the Cmd. An empty result is an
// invalid argument.
func Args(entrypoint, cmd, criCommand, criArgs []string) ([]string, error) {
	if len(criCommand) > 0 {
		entrypoint = criCommand
		cmd = nil
	}
	if len(criArgs) > 0 {
		cmd = criArgs
	}
	out := make([]string, 0, len(entrypoint)+len(cmd))
	out = append(out, entrypoint...)
	out = append(out, cmd...)
	if len(out) == 0 {
		return nil, fmt.Errorf("no command specified by the image or the container config: %w", errdefs.ErrInvalidArgument)
	}
	return out, nil
}

// Env merges environment lists: HOSTNAME first (when not empty), then the
// image's "K=V" entries, then the CRI envs. A later entry replaces an earlier
// one with the same key in place, so the order of first appearance is kept.
// PATH is added with DefaultPath when nothing set it.
func Env(hostname string, image []string, cri []*runtimeapi.KeyValue) []string {
	var keys []string
	vals := map[string]string{}
	set := func(k, v string) {
		if _, ok := vals[k]; !ok {
			keys = append(keys, k)
		}
		vals[k] = v
	}
	if hostname != "" {
		set("HOSTNAME", hostname)
	}
	for _, kv := range image {
		k, v, _ := strings.Cut(kv, "=")
		if k != "" {
			set(k, v)
		}
	}
	for _, kv := range cri {
		if kv.GetKey() != "" {
			set(kv.GetKey(), string(kv.GetValue()))
		}
	}
	env := make([]string, 0, len(keys)+1)
	if _, ok := vals["PATH"]; !ok {
		env = append(env, "PATH="+DefaultPath)
	}
	for _, k := range keys {
		env = append(env, k+"="+vals[k])
	}
	return env
}

// hostnameEnv is the value of HOSTNAME: the pod's hostname, or the node's for
// a host-network pod that names none.
func (b *builder) hostnameEnv() string {
	h := b.in.Sandbox.GetHostname()
	if h == "" && b.in.Namespaces.HostNetwork {
		h = b.in.NodeHostname
	}
	return h
}

func workingDir(cri, image string) string {
	switch {
	case cri != "":
		return cri
	case image != "":
		return image
	default:
		return "/"
	}
}

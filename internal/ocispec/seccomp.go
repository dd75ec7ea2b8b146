package ocispec

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/containerd/errdefs"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// seccomp fills linux.seccomp. Privileged containers run unconfined.
func (b *builder) seccomp() error {
	if b.privileged {
		return nil
	}
	prof, err := Seccomp(b.sc, b.spec.Process.Capabilities)
	if err != nil {
		return err
	}
	b.spec.Linux.Seccomp = prof
	return nil
}

// Seccomp picks the profile a CRI security context asks for: nil for
// Unconfined, DefaultSeccomp(caps) for RuntimeDefault, the JSON file for
// Localhost. Without the seccomp field the deprecated seccomp_profile_path
// is read ("", "unconfined", "runtime/default", "docker/default",
// "localhost/<path>"); empty means unconfined, as the kubelet expects.
func Seccomp(sc *runtimeapi.LinuxContainerSecurityContext, caps *specs.LinuxCapabilities) (*specs.LinuxSeccomp, error) {
	if p := sc.GetSeccomp(); p != nil {
		switch p.GetProfileType() {
		case runtimeapi.SecurityProfile_Unconfined:
			return nil, nil
		case runtimeapi.SecurityProfile_RuntimeDefault:
			return DefaultSeccomp(caps), nil
		case runtimeapi.SecurityProfile_Localhost:
			return LoadSeccomp(p.GetLocalhostRef())
		default:
			return nil, fmt.Errorf("seccomp profile type %v is unknown: %w", p.GetProfileType(), errdefs.ErrInvalidArgument)
		}
	}
	//lint:ignore SA1019 older kubelets still send the deprecated field
	switch path := sc.GetSeccompProfilePath(); {
	case path == "" || path == "unconfined":
		return nil, nil
	case path == "runtime/default" || path == "docker/default":
		return DefaultSeccomp(caps), nil
	case strings.HasPrefix(path, "localhost/"):
		return LoadSeccomp(strings.TrimPrefix(path, "localhost/"))
	default:
		return nil, fmt.Errorf("seccomp_profile_path %q is not understood: %w", path, errdefs.ErrInvalidArgument)
	}
}

// LoadSeccomp reads a Localhost seccomp profile: OCI JSON, or Docker's
// profile format as far as it overlaps (an archMap entry for this machine
// supplies the architectures; includes and excludes are not evaluated).
func LoadSeccomp(path string) (*specs.LinuxSeccomp, error) {
	if path == "" || !strings.HasPrefix(path, "/") {
		return nil, fmt.Errorf("seccomp localhost profile %q must be an absolute path: %w", path, errdefs.ErrInvalidArgument)
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("seccomp localhost profile %q does not exist: %w", path, errdefs.ErrInvalidArgument)
	}
	if err != nil {
		return nil, fmt.Errorf("read seccomp profile %q: %v: %w", path, err, errdefs.ErrInvalidArgument)
	}
	var prof struct {
		specs.LinuxSeccomp
		ArchMap []struct {
			Arch string       `json:"architecture"`
			Sub  []specs.Arch `json:"subArchitectures"`
		} `json:"archMap"`
	}
	if err := json.Unmarshal(data, &prof); err != nil {
		return nil, fmt.Errorf("decode seccomp profile %q: %v: %w", path, err, errdefs.ErrInvalidArgument)
	}
	if prof.DefaultAction == "" {
		return nil, fmt.Errorf("seccomp profile %q has no defaultAction: %w", path, errdefs.ErrInvalidArgument)
	}
	out := prof.LinuxSeccomp
	if len(out.Architectures) == 0 {
		native := nativeArches()
		for _, m := range prof.ArchMap {
			if len(native) > 0 && specs.Arch(m.Arch) == native[0] {
				out.Architectures = append([]specs.Arch{native[0]}, m.Sub...)
			}
		}
	}
	return &out, nil
}

package ocispec

import (
	"slices"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// BuildExecProcess returns the process for an exec in a container built
// from spec: the container's user, groups, env, working directory,
// capabilities, no_new_privs, rlimits, oom_score_adj and security labels,
// with cmd as its args and tty as its terminal flag. Nothing is shared with
// spec, so the caller may change the result freely.
func BuildExecProcess(spec *specs.Spec, cmd []string, tty bool) specs.Process {
	var base specs.Process
	if spec != nil && spec.Process != nil {
		base = *spec.Process
	}
	p := specs.Process{
		Terminal:        tty,
		User:            base.User,
		Args:            slices.Clone(cmd),
		Env:             slices.Clone(base.Env),
		Cwd:             base.Cwd,
		Rlimits:         slices.Clone(base.Rlimits),
		NoNewPrivileges: base.NoNewPrivileges,
		ApparmorProfile: base.ApparmorProfile,
		SelinuxLabel:    base.SelinuxLabel,
	}
	p.User.AdditionalGids = slices.Clone(base.User.AdditionalGids)
	if p.Cwd == "" {
		p.Cwd = "/"
	}
	if base.OOMScoreAdj != nil {
		p.OOMScoreAdj = ptr(*base.OOMScoreAdj)
	}
	if c := base.Capabilities; c != nil {
		p.Capabilities = &specs.LinuxCapabilities{
			Bounding:    slices.Clone(c.Bounding),
			Effective:   slices.Clone(c.Effective),
			Inheritable: slices.Clone(c.Inheritable),
			Permitted:   slices.Clone(c.Permitted),
			Ambient:     slices.Clone(c.Ambient),
		}
	}
	return p
}

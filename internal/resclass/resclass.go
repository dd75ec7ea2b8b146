// Package resclass resolves a container's block I/O and RDT classes, named
// by NRI plugins or by the Kubernetes class annotations, into its OCI spec,
// through github.com/intel/goresctrl as containerd and CRI-O do: a block
// I/O class becomes Linux.Resources.BlockIO from the blockio_config_file, an
// RDT class the CLOS (Linux.IntelRdt.ClosID) that the rdt_config_file made
// under resctrl. A class crib cannot give is an error naming what is
// missing, never silence.
//
// goresctrl keeps its configuration process-wide, so a process has one
// Classes.
package resclass

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/intel/goresctrl/pkg/blockio"
	"github.com/intel/goresctrl/pkg/rdt"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

// Classes resolves class names. A nil *Classes has no class configured:
// every class it is asked for is an error saying so.
type Classes struct {
	blockioFile string
	rdtFile     string
	// rdtErr says why RDT classes cannot be given (no file, no resctrl);
	// nil when the rdt_config_file is in force.
	rdtErr error
}

// Load reads the class configuration files, each optional. A block I/O file
// that cannot be read or holds a bad class is an error. An RDT file on a
// host without resctrl is not: its classes are refused, naming why, so that
// one configuration serves hosts with and without RDT. goresctrl's
// configuration is the process's: the last Load is in force.
func Load(blockioFile, rdtFile string, log *slog.Logger) (*Classes, error) {
	if log == nil {
		log = slog.Default()
	}
	c := &Classes{blockioFile: blockioFile, rdtFile: rdtFile}
	if blockioFile != "" {
		blockio.SetLogger(log.With("component", "blockio"))
		// force=false: a class with a bad value fails the start, naming
		// it, rather than running with part of it.
		if err := blockio.SetConfigFromFile(blockioFile, false); err != nil {
			return nil, fmt.Errorf("blockio_config_file: %w", err)
		}
		log.Info("block I/O classes configured", "file", blockioFile, "classes", blockio.GetClasses())
	}
	switch {
	case rdtFile == "":
		c.rdtErr = errors.New("no rdt_config_file is configured")
	case !ResctrlMounted():
		c.rdtErr = fmt.Errorf("rdt_config_file %s is not in force: resctrl is not mounted on this host (/sys/fs/resctrl)", rdtFile)
		log.Warn("RDT classes unavailable", "err", c.rdtErr)
	default:
		rdt.SetLogger(log.With("component", "rdt"))
		if err := rdt.Initialize(""); err != nil {
			c.rdtErr = fmt.Errorf("rdt_config_file %s is not in force: %w", rdtFile, err)
			log.Warn("RDT classes unavailable", "err", c.rdtErr)
			break
		}
		// force=true: groups left by an earlier daemon are taken over,
		// as containerd does.
		if err := rdt.SetConfigFromFile(rdtFile, true); err != nil {
			return nil, fmt.Errorf("rdt_config_file: %w", err)
		}
	}
	return c, nil
}

// BlockIO is the OCI block I/O settings of class.
func (c *Classes) BlockIO(class string) (*specs.LinuxBlockIO, error) {
	if c == nil || c.blockioFile == "" {
		return nil, fmt.Errorf("block I/O class %q: no blockio_config_file is configured", class)
	}
	b, err := blockio.OciLinuxBlockIO(class)
	if err != nil {
		return nil, fmt.Errorf("block I/O class %q is not in blockio_config_file %s (it has %s)", class, c.blockioFile, strings.Join(blockio.GetClasses(), ", "))
	}
	return b, nil
}

// RDT is the OCI RDT settings of class: its CLOS.
func (c *Classes) RDT(class string) (*specs.LinuxIntelRdt, error) {
	if err := c.rdtReady(); err != nil {
		return nil, fmt.Errorf("RDT class %q: %w", class, err)
	}
	if !rdt.IsQualifiedClassName(class) {
		return nil, fmt.Errorf("RDT class %q is not a valid class name", class)
	}
	if _, ok := rdt.GetClass(class); !ok {
		return nil, fmt.Errorf("RDT class %q is not in rdt_config_file %s", class, c.rdtFile)
	}
	return &specs.LinuxIntelRdt{ClosID: class}, nil
}

func (c *Classes) rdtReady() error {
	if c == nil {
		return errors.New("no rdt_config_file is configured")
	}
	return c.rdtErr
}

// Annotated are the classes a container's annotations give it.
type Annotated struct {
	BlockIO *specs.LinuxBlockIO
	RDT     *specs.LinuxIntelRdt
}

// FromAnnotations resolves the classes a container's CRI annotations or its
// pod's annotations name (io.kubernetes.cri.blockio-class,
// blockio.resources.beta.kubernetes.io/pod and /container.NAME, and the
// same for rdt), as containerd does; errors name the annotation.
func (c *Classes) FromAnnotations(container string, ctrAnnotations, podAnnotations map[string]string) (Annotated, error) {
	var out Annotated
	class, err := blockio.ContainerClassFromAnnotations(container, ctrAnnotations, podAnnotations)
	if err == nil && class != "" {
		out.BlockIO, err = c.BlockIO(class)
	}
	if err != nil {
		return out, fmt.Errorf("block I/O class annotation: %w", err)
	}
	if !hasRDTAnnotation(container, ctrAnnotations, podAnnotations) {
		return out, nil
	}
	if err := c.rdtReady(); err != nil {
		return out, fmt.Errorf("RDT class annotation: %w", err)
	}
	class, err = rdt.ContainerClassFromAnnotations(container, ctrAnnotations, podAnnotations)
	if err != nil {
		return out, fmt.Errorf("RDT class annotation: %w", err)
	}
	if class != "" {
		out.RDT = &specs.LinuxIntelRdt{ClosID: class}
	}
	return out, nil
}

// Apply puts the classes into spec.
func (a Annotated) Apply(spec *specs.Spec) {
	if a.BlockIO != nil {
		resources(spec).BlockIO = a.BlockIO
	}
	if a.RDT != nil {
		if spec.Linux == nil {
			spec.Linux = &specs.Linux{}
		}
		spec.Linux.IntelRdt = a.RDT
	}
}

// hasRDTAnnotation reports whether an annotation names the container's RDT
// class: goresctrl's own lookup errs on every container when RDT is not
// initialised, named or not.
func hasRDTAnnotation(container string, ctr, pod map[string]string) bool {
	_, a := ctr[rdt.RdtContainerAnnotation]
	_, b := pod[rdt.RdtPodAnnotation]
	_, c := pod[rdt.RdtPodAnnotationContainerPrefix+container]
	return a || b || c
}

// CheckRDT refuses a spec with RDT settings on a host without resctrl, where
// runc would fail the start with a less clear error.
func CheckRDT(spec *specs.Spec) error {
	if spec.Linux == nil || spec.Linux.IntelRdt == nil || ResctrlMounted() {
		return nil
	}
	return errors.New("RDT (Linux.IntelRdt): resctrl is not mounted on this host (/sys/fs/resctrl)")
}

func resources(spec *specs.Spec) *specs.LinuxResources {
	if spec.Linux == nil {
		spec.Linux = &specs.Linux{}
	}
	if spec.Linux.Resources == nil {
		spec.Linux.Resources = &specs.LinuxResources{}
	}
	return spec.Linux.Resources
}

// ResctrlMounted reports whether resctrl is mounted where the kernel's
// documentation, runc and goresctrl expect it, /sys/fs/resctrl.
func ResctrlMounted() bool {
	var st unix.Statfs_t
	return unix.Statfs("/sys/fs/resctrl", &st) == nil && st.Type == unix.RDTGROUP_SUPER_MAGIC
}

// Package archive names the parts of a container checkpoint archive and
// reads one back for a restore.
package archive

import "time"

// The names of an archive's parts, as checkpointctl's metadata package
// (github.com/checkpoint-restore/checkpointctl/lib) defines them, and CRI-O
// and containerd write them. That module is not imported: its go.mod would
// raise the versions of runtime-spec, x/sys and protobuf crib builds with,
// for a dozen constants and one struct.
const (
	ConfigDumpFile      = "config.dump"
	SpecDumpFile        = "spec.dump"
	StatusDumpFile      = "status.dump"
	CheckpointDirectory = "checkpoint"
	RootFsDiffTar       = "rootfs-diff.tar"
	DeletedFilesFile    = "deleted.files"
	// DumpLogFile is CRIU's log, in its work directory beside its
	// stats-dump (the dump's timing); both are archived as they are.
	DumpLogFile = "dump.log"
	// StatusFile is containerd's own record of the container.
	StatusFile = "status"
	// ContainerLogFile is the container's CRI log, under containerd's name.
	ContainerLogFile = "container.log"
)

// ContainerConfig is config.dump: checkpointctl's ContainerConfig, field
// for field.
type ContainerConfig struct {
	ID              string    `json:"id"`
	Name            string    `json:"name"`
	RootfsImage     string    `json:"rootfsImage,omitempty"`
	RootfsImageRef  string    `json:"rootfsImageRef,omitempty"`
	RootfsImageName string    `json:"rootfsImageName,omitempty"`
	OCIRuntime      string    `json:"runtime,omitempty"`
	CreatedTime     time.Time `json:"createdTime"`
	CheckpointedAt  time.Time `json:"checkpointedTime"`
	RestoredAt      time.Time `json:"restoredTime"`
	Restored        bool      `json:"restored"`
}

// ContainerdStatus is the status file: checkpointctl's ContainerdStatus
// (times in Unix nanoseconds).
type ContainerdStatus struct {
	CreatedAt  int64
	StartedAt  int64
	FinishedAt int64
	ExitCode   int32
	Pid        uint32
	Reason     string
	Message    string
}

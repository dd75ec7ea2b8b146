package checkpoint

import "time"

// The names of an archive's parts, as checkpointctl's metadata package
// (github.com/checkpoint-restore/checkpointctl/lib) defines them, and CRI-O
// and containerd write them. That module is not imported: its go.mod would
// raise the versions of runtime-spec, x/sys and protobuf crib builds with,
// for a dozen constants and one struct.
const (
	configDumpFile      = "config.dump"
	specDumpFile        = "spec.dump"
	statusDumpFile      = "status.dump"
	checkpointDirectory = "checkpoint"
	rootFsDiffTar       = "rootfs-diff.tar"
	deletedFilesFile    = "deleted.files"
	// dumpLogFile is CRIU's log, in its work directory beside its
	// stats-dump (the dump's timing); both are archived as they are.
	dumpLogFile = "dump.log"
	// statusFile is containerd's own record of the container.
	statusFile = "status"
	// containerLogFile is the container's CRI log, under containerd's name.
	containerLogFile = "container.log"
)

// containerConfig is config.dump: checkpointctl's ContainerConfig, field
// for field.
type containerConfig struct {
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

// containerdStatus is the status file: checkpointctl's ContainerdStatus
// (times in Unix nanoseconds).
type containerdStatus struct {
	CreatedAt  int64
	StartedAt  int64
	FinishedAt int64
	ExitCode   int32
	Pid        uint32
	Reason     string
	Message    string
}

package monitor

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// exitVersion is the version of the exit file format.
const exitVersion = 1

// Exit is the record of a container's end.
type Exit struct {
	Version int `json:"version"`
	// ExitCode is the init's exit status, or 128+signal when a signal
	// killed it.
	ExitCode int `json:"exit_code"`
	// ExitedAt is when the monitor reaped the init.
	ExitedAt time.Time `json:"exited_at"`
	// OOMKilled is set when the container's memory cgroup saw an OOM kill.
	OOMKilled bool `json:"oom_killed"`
}

// writeExit stores e at path atomically (temporary file, fsync, rename).
func writeExit(path string, e Exit) error {
	e.Version = exitVersion
	b, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("encode exit record: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-")
	if err != nil {
		return fmt.Errorf("write exit record: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		tmp.Close()
		return fmt.Errorf("write exit record: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("write exit record: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write exit record: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write exit record: %w", err)
	}
	return nil
}

// ReadExit reads the exit record at path. It reports false, and no error,
// when there is none yet.
func ReadExit(path string) (Exit, bool, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return Exit{}, false, nil
	}
	if err != nil {
		return Exit{}, false, fmt.Errorf("read exit record: %w", err)
	}
	var e Exit
	if err := json.Unmarshal(b, &e); err != nil {
		return Exit{}, false, fmt.Errorf("decode exit record %s: %w", path, err)
	}
	if e.Version != exitVersion {
		return Exit{}, false, fmt.Errorf("exit record %s: unknown version %d", path, e.Version)
	}
	return e, true, nil
}

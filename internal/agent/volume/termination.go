package volume

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
)

// TerminationMessagePath creates, if needed, and returns the host file that
// receives a container's termination message:
// <Root>/<uid>/containers/<container>/<restartCount>/termination-log, mode
// 0666 so that a container running as any user can write it. A new
// restartCount gets a new, empty file; an existing file is left as it is.
func (m *Manager) TerminationMessagePath(uid, container string, restartCount uint32) (string, error) {
	if err := checkName("pod uid", uid); err != nil {
		return "", fmt.Errorf("create termination log: %w", err)
	}
	if err := checkName("container name", container); err != nil {
		return "", fmt.Errorf("create termination log of pod %s: %w", uid, err)
	}
	podDir, err := m.podDir(uid, true)
	if err != nil {
		return "", err
	}
	dir := filepath.Join(podDir, "containers", container, strconv.FormatUint(uint64(restartCount), 10))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("create termination log of %s in pod %s: %w", container, uid, err)
	}
	path := filepath.Join(dir, "termination-log")
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o666)
	if errors.Is(err, fs.ErrExist) {
		// Made by an earlier call, which may have stopped before its chmod.
		fi, err := os.Lstat(path)
		if err == nil && fi.Mode().IsRegular() && fi.Mode().Perm() != 0o666 {
			err = os.Chmod(path, 0o666)
		}
		if err != nil {
			return "", fmt.Errorf("create termination log of %s in pod %s: %w", container, uid, err)
		}
		return path, nil
	}
	if err != nil {
		return "", fmt.Errorf("create termination log of %s in pod %s: %w", container, uid, err)
	}
	defer f.Close()
	// The umask may have taken bits away.
	if err := f.Chmod(0o666); err != nil {
		return "", fmt.Errorf("create termination log of %s in pod %s: %w", container, uid, err)
	}
	return path, nil
}

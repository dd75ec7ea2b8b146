package ociruntime

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/containerd/errdefs"
)

// logEntry is one line of the runtime's JSON log (--log-format json).
type logEntry struct {
	Level string `json:"level"`
	Msg   string `json:"msg"`
}

// LastError returns the last error message in runtime output: JSON log
// lines with level "error" win; plain text lines (the runtime repeats its
// fatal error on standard error when it logs to a file) are used when no JSON
// error is present. It returns "" when there is nothing.
func LastError(out []byte) string {
	var jsonMsg, plain string
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		var e logEntry
		if strings.HasPrefix(line, "{") && json.Unmarshal([]byte(line), &e) == nil {
			if e.Level == "error" || e.Level == "fatal" {
				jsonMsg = e.Msg
			}
			continue
		}
		plain = line
	}
	if jsonMsg != "" {
		return jsonMsg
	}
	return plain
}

// LastErrorInFile is LastError over the contents of a runtime log file. A
// missing or unreadable file yields "".
func LastErrorInFile(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return LastError(b)
}

// Classify wraps a runtime error message in the errdefs class it denotes,
// or returns a plain error when the message names no known class.
func Classify(msg string) error {
	lower := strings.ToLower(msg)
	switch {
	// Only the runtime's word for an unknown container: a process's
	// "executable file not found" must not read as a missing container.
	case strings.Contains(lower, "does not exist"):
		return fmt.Errorf("%s: %w", msg, errdefs.ErrNotFound)
	case strings.Contains(lower, "already exists"):
		return fmt.Errorf("%s: %w", msg, errdefs.ErrAlreadyExists)
	case strings.Contains(lower, "not running"), strings.Contains(lower, "process already finished"),
		strings.Contains(lower, "stopped container"):
		return fmt.Errorf("%s: %w", msg, errdefs.ErrFailedPrecondition)
	}
	return errors.New(msg)
}

// runtimeError builds the error for a failed runtime command from its exit
// error and its standard error output.
func runtimeError(binary, verb string, runErr error, stderr []byte) error {
	msg := LastError(stderr)
	if msg == "" {
		return fmt.Errorf("%s %s: %w", binary, verb, runErr)
	}
	return fmt.Errorf("%s %s: %w", binary, verb, Classify(msg))
}

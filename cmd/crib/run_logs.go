package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"

	"github.com/crib-dev/crib/internal/agent/podconfig"
	"github.com/crib-dev/crib/internal/monitor"
)

// logFollower prints the CRI log files of running pods as they grow,
// each line prefixed with its container's name.
type logFollower struct {
	logRoot        string
	stdout, stderr io.Writer
	withPod        bool
	files          map[string]*followedFile
}

type followedFile struct {
	prefix string
	offset int64
	lines  monitor.LogJoiner
}

func newLogFollower(logRoot string, stdout, stderr io.Writer, withPod bool) *logFollower {
	return &logFollower{logRoot: logRoot, stdout: stdout, stderr: stderr, withPod: withPod, files: map[string]*followedFile{}}
}

// poll reads what every known log file gained since the last poll, and
// starts following the files of containers that appeared. Files whose pod
// is gone are read one last time, then dropped.
func (l *logFollower) poll(pods []corev1.Pod) {
	for i := range pods {
		p := &pods[i]
		dir := podconfig.PodLogDirectory(l.logRoot, p)
		for _, cs := range append(p.Status.InitContainerStatuses, p.Status.ContainerStatuses...) {
			if cs.ContainerID == "" {
				continue
			}
			path := filepath.Join(dir, podconfig.ContainerLogPath(cs.Name, uint32(cs.RestartCount)))
			if _, ok := l.files[path]; !ok {
				prefix := cs.Name
				if l.withPod {
					prefix = p.Name + "/" + cs.Name
				}
				l.files[path] = &followedFile{prefix: prefix}
			}
		}
	}
	for path, f := range l.files {
		l.read(path, f)
	}
}

func (l *logFollower) read(path string, f *followedFile) {
	file, err := os.Open(path)
	if err != nil {
		return
	}
	defer file.Close()
	if _, err := file.Seek(f.offset, io.SeekStart); err != nil {
		return
	}
	data, err := io.ReadAll(file)
	if err != nil || len(data) == 0 {
		return
	}
	end := bytes.LastIndexByte(data, '\n')
	if end < 0 {
		return // wait for the line to end
	}
	f.offset += int64(end + 1)
	for _, line := range bytes.Split(data[:end], []byte{'\n'}) {
		l.printCRILine(f, line)
	}
}

// printCRILine prints one line of the CRI log format, once the partial
// lines before it are joined to it.
func (l *logFollower) printCRILine(f *followedFile, line []byte) {
	whole, ok := f.lines.Add(line)
	if !ok {
		return
	}
	out := l.stdout
	if whole.Stream == monitor.StreamStderr {
		out = l.stderr
	}
	fmt.Fprintf(out, "%s | %s\n", f.prefix, whole.Text)
}

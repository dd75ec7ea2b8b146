package main

import (
	"bytes"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"

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
	// container is the log directory and the container's name; restart
	// its restart count, the instance this file is the log of.
	container string
	restart   int32
	offset    int64
	lines     monitor.LogJoiner
	// done: the instance ended and its file was read to the end, its
	// unfinished last line (a partial record) printed.
	done bool
}

func newLogFollower(logRoot string, stdout, stderr io.Writer, withPod bool) *logFollower {
	return &logFollower{logRoot: logRoot, stdout: stdout, stderr: stderr, withPod: withPod, files: map[string]*followedFile{}}
}

// poll reads what every known log file gained since the last poll, and
// starts following the files of containers that appeared. A file whose
// container has terminated, or been replaced by a newer instance, is read a
// last time and its unfinished last line printed; poll(nil), once the pods
// are gone, does so for every file.
func (l *logFollower) poll(pods []corev1.Pod) {
	ended := map[string]bool{}
	newest := map[string]int32{}
	for i := range pods {
		p := &pods[i]
		dir := podconfig.PodLogDirectory(l.logRoot, p)
		for _, cs := range append(p.Status.InitContainerStatuses, p.Status.ContainerStatuses...) {
			if cs.ContainerID == "" {
				continue
			}
			path := filepath.Join(dir, podconfig.ContainerLogPath(cs.Name, uint32(cs.RestartCount)))
			container := filepath.Join(dir, cs.Name)
			if r, ok := newest[container]; !ok || cs.RestartCount > r {
				newest[container] = cs.RestartCount
			}
			ended[path] = cs.State.Terminated != nil
			if _, ok := l.files[path]; !ok {
				prefix := cs.Name
				if l.withPod {
					prefix = p.Name + "/" + cs.Name
				}
				l.files[path] = &followedFile{prefix: prefix, container: container, restart: cs.RestartCount}
			}
		}
	}
	// In the paths' order: a pod's containers, each instance in turn.
	for _, path := range slices.Sorted(maps.Keys(l.files)) {
		f := l.files[path]
		if f.done {
			continue
		}
		l.read(path, f)
		if r, ok := newest[f.container]; pods == nil || ended[path] || (ok && r > f.restart) {
			l.print(f, f.lines.Flush())
			f.done = true
		}
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
	if whole, ok := f.lines.Add(line); ok {
		l.print(f, []monitor.LogLine{whole})
	}
}

func (l *logFollower) print(f *followedFile, lines []monitor.LogLine) {
	for _, line := range lines {
		out := l.stdout
		if line.Stream == monitor.StreamStderr {
			out = l.stderr
		}
		fmt.Fprintf(out, "%s | %s\n", f.prefix, line.Text)
	}
}

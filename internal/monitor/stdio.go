package monitor

import (
	"fmt"
	"os"
)

// stdio holds the pipes between the monitor and the container. The child
// ends go to the runtime (and so to the container); the monitor keeps the
// other ends. A terminal container will get its pty master here instead
// (through the runtime's console socket).
type stdio struct {
	childIn, childOut, childErr *os.File
	in                          *os.File // write end of stdin; nil without stdin
	out, errR                   *os.File // read ends of stdout and stderr
}

func newStdio(withStdin bool) (*stdio, error) {
	p := &stdio{}
	var err error
	if p.out, p.childOut, err = os.Pipe(); err != nil {
		return nil, fmt.Errorf("stdout pipe: %w", err)
	}
	if p.errR, p.childErr, err = os.Pipe(); err != nil {
		p.closeAll()
		return nil, fmt.Errorf("stderr pipe: %w", err)
	}
	if withStdin {
		p.childIn, p.in, err = os.Pipe()
	} else {
		p.childIn, err = os.Open(os.DevNull)
	}
	if err != nil {
		p.closeAll()
		return nil, fmt.Errorf("stdin: %w", err)
	}
	return p, nil
}

func (p *stdio) closeChildEnds() {
	closeFiles(p.childIn, p.childOut, p.childErr)
}

func (p *stdio) closeOurEnds() {
	closeFiles(p.in, p.out, p.errR)
}

func (p *stdio) closeAll() {
	p.closeChildEnds()
	p.closeOurEnds()
}

func closeFiles(fs ...*os.File) {
	for _, f := range fs {
		if f != nil {
			_ = f.Close()
		}
	}
}

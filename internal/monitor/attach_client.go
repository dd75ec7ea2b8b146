package monitor

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/crib-dev/crib/internal/ociruntime"
)

// AttachIO are the client's ends of an attach session. Nil fields are
// streams the client does not want; a nil Stderr drops the container's
// stderr.
type AttachIO struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	Resize         <-chan ociruntime.WinSize
}

// Attach joins io to the container: its output from now on goes to Stdout
// and Stderr, Stdin goes to the container's stdin (when it has one; the
// end of Stdin closes the container's stdin when it was created with
// stdin_once) and Resize events resize its terminal. Attach returns nil
// once the container's output ended (it exited), or ctx's error when ctx
// ends first; the monitor then ends the session.
func (c *Client) Attach(ctx context.Context, aio AttachIO) error {
	conn, err := dial(ctx, c.socket)
	if err != nil {
		return err
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	if _, err := conn.Write([]byte(cmdAttach + "\n")); err != nil {
		return c.connError(ctx, err)
	}
	br := bufio.NewReader(conn)
	line, err := br.ReadBytes('\n')
	if err != nil {
		return c.connError(ctx, err)
	}
	var r reply
	if err := json.Unmarshal(line, &r); err != nil {
		return fmt.Errorf("decode monitor reply: %w", err)
	}
	if r.Error != "" {
		return fmt.Errorf("monitor: %s", r.Error)
	}
	// Input and resizes go out on their own goroutines; they end when the
	// connection is closed at return, or with the client's reader.
	var wmu sync.Mutex
	send := func(kind byte, payload []byte) error {
		wmu.Lock()
		defer wmu.Unlock()
		return writeFrame(conn, kind, payload)
	}
	done := make(chan struct{})
	defer close(done)
	if aio.Stdin != nil {
		go func() {
			buf := make([]byte, 32*1024)
			for {
				n, err := aio.Stdin.Read(buf)
				if n > 0 && send(frameStdin, buf[:n]) != nil {
					return
				}
				if err != nil {
					_ = send(frameStdinClose, nil)
					return
				}
			}
		}()
	}
	if aio.Resize != nil {
		go func() {
			for {
				select {
				case size, ok := <-aio.Resize:
					if !ok {
						return
					}
					var p [4]byte
					binary.BigEndian.PutUint16(p[0:2], size.Width)
					binary.BigEndian.PutUint16(p[2:4], size.Height)
					if send(frameResize, p[:]) != nil {
						return
					}
				case <-done:
					return
				}
			}
		}()
	}
	for {
		kind, payload, err := readFrame(br)
		if err == io.EOF {
			return nil
		}
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("attach: %w", err)
		}
		w := aio.Stdout
		if kind == frameStderr {
			w = aio.Stderr
		}
		if w == nil {
			continue
		}
		if _, err := w.Write(payload); err != nil {
			return fmt.Errorf("attach: write output: %w", err)
		}
	}
}

package monitor

import (
	"encoding/binary"
	"fmt"
	"io"
)

// An attach connection, after the command line and the monitor's reply,
// carries frames both ways: a kind byte, a big-endian uint32 length, then
// that many bytes of payload.
const (
	// Client to monitor.
	frameStdin      byte = 0 // bytes for the container's stdin
	frameStdinClose byte = 3 // the client's input ended (no payload)
	frameResize     byte = 4 // uint16 width, uint16 height, big-endian
	// Monitor to client.
	frameStdout byte = 1
	frameStderr byte = 2
)

// maxFrame bounds a frame's payload.
const maxFrame = 1 << 20

// writeFrame writes one frame with a single write call.
func writeFrame(w io.Writer, kind byte, payload []byte) error {
	buf := make([]byte, 5+len(payload))
	buf[0] = kind
	binary.BigEndian.PutUint32(buf[1:5], uint32(len(payload)))
	copy(buf[5:], payload)
	_, err := w.Write(buf)
	return err
}

// readFrame reads one frame.
func readFrame(r io.Reader) (byte, []byte, error) {
	var hdr [5]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return 0, nil, err
	}
	n := binary.BigEndian.Uint32(hdr[1:5])
	if n > maxFrame {
		return 0, nil, fmt.Errorf("attach frame of %d bytes exceeds %d", n, maxFrame)
	}
	payload := make([]byte, n)
	if _, err := io.ReadFull(r, payload); err != nil {
		return 0, nil, fmt.Errorf("read attach frame: %w", io.ErrUnexpectedEOF)
	}
	return hdr[0], payload, nil
}

package checkpoint

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"os"
)

// tarFile writes a tar archive to a file with archive/tar's headers but
// copies each member's data file to file in the kernel (copy_file_range,
// through os.File.ReadFrom): CRIU's page images are most of a checkpoint,
// and a tar.Writer would pull every byte of them through user space.
type tarFile struct {
	f *os.File
}

// header writes hdr's header blocks (PAX records included).
func (t tarFile) header(hdr *tar.Header) error {
	var buf bytes.Buffer
	// Only the header is asked of this writer: it is dropped unclosed.
	if err := tar.NewWriter(&buf).WriteHeader(hdr); err != nil {
		return err
	}
	_, err := t.f.Write(buf.Bytes())
	return err
}

// member writes hdr and then hdr.Size bytes of data from r, padded to a
// whole block.
func (t tarFile) member(hdr *tar.Header, r io.Reader) error {
	if err := t.header(hdr); err != nil {
		return err
	}
	n, err := io.Copy(t.f, io.LimitReader(r, hdr.Size))
	if err != nil {
		return err
	}
	if n != hdr.Size {
		return fmt.Errorf("%s: %d bytes, want %d: %w", hdr.Name, n, hdr.Size, io.ErrUnexpectedEOF)
	}
	return t.pad(hdr.Size)
}

// pad writes the zeros that end a member of size bytes on a block.
func (t tarFile) pad(size int64) error {
	if rem := size % blockSize; rem != 0 {
		_, err := t.f.Write(make([]byte, blockSize-rem))
		return err
	}
	return nil
}

// close writes the two zero blocks that end an archive.
func (t tarFile) close() error {
	_, err := t.f.Write(make([]byte, 2*blockSize))
	return err
}

const blockSize = 512

package image

import (
	"context"
	"io"
)

// Progress is one report of a pull's progress on one layer blob.
type Progress struct {
	// Layer is the layer blob's digest.
	Layer string
	// Done counts the bytes fetched so far; Total is the blob's size.
	Done, Total int64
}

// PullOption changes how one Pull works.
type PullOption func(*PullOptions)

// PullOptions are the settings PullOption functions change; the zero value is a
// plain pull.
type PullOptions struct {
	// Progress, when set, is called as WithProgress describes.
	Progress func(Progress)
	// Namespace is the pod's namespace, which picks its signature policy
	// (see WithNamespace).
	Namespace string
}

// WithProgress has Pull call fn for every layer once the manifest is read
// (Done == Total for a layer already present, 0 otherwise), as layer bytes
// arrive, and with Done == Total for every other layer when the pull
// succeeds. fn may be called from several goroutines at
// once (for different layers) and must not block for long.
func WithProgress(fn func(Progress)) PullOption {
	return func(o *PullOptions) { o.Progress = fn }
}

// WithNamespace names the namespace of the pod the image is pulled for:
// the signature policy of that namespace applies (Config.Signatures).
func WithNamespace(ns string) PullOption {
	return func(o *PullOptions) { o.Namespace = ns }
}

// countingOpener wraps a layer opener so that reads report progress.
func countingOpener(open func(context.Context) (io.ReadCloser, error), layer string, total int64, fn func(Progress)) func(context.Context) (io.ReadCloser, error) {
	return func(ctx context.Context) (io.ReadCloser, error) {
		rc, err := open(ctx)
		if err != nil {
			return nil, err
		}
		fn(Progress{Layer: layer, Total: total})
		return &countingReader{ReadCloser: rc, p: Progress{Layer: layer, Total: total}, fn: fn}, nil
	}
}

type countingReader struct {
	io.ReadCloser
	p  Progress
	fn func(Progress)
}

func (c *countingReader) Read(b []byte) (int, error) {
	n, err := c.ReadCloser.Read(b)
	if n > 0 {
		c.p.Done += int64(n)
		c.fn(c.p)
	}
	return n, err
}

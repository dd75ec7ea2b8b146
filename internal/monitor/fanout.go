package monitor

import (
	"sync"
)

// subscriberQueue is how many output chunks an attached client may lag
// behind; a client further behind is disconnected, so that the container
// never waits on it.
const subscriberQueue = 512

// chunk is a piece of the container's output.
type chunk struct {
	kind byte // frameStdout or frameStderr
	data []byte
}

// fanout copies the container's output to the attached clients.
type fanout struct {
	mu     sync.Mutex
	subs   map[chan chunk]struct{}
	closed bool
}

func newFanout() *fanout { return &fanout{subs: map[chan chunk]struct{}{}} }

// subscribe returns a channel of the output from now on, closed when the
// output ends or the client lags too far; false once the output ended.
func (f *fanout) subscribe() (chan chunk, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return nil, false
	}
	ch := make(chan chunk, subscriberQueue)
	f.subs[ch] = struct{}{}
	return ch, true
}

// unsubscribe stops delivery to ch.
func (f *fanout) unsubscribe(ch chan chunk) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.subs[ch]; ok {
		delete(f.subs, ch)
		close(ch)
	}
}

// send delivers a copy of data to every subscriber without blocking.
func (f *fanout) send(kind byte, data []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.subs) == 0 || len(data) == 0 {
		return
	}
	c := chunk{kind: kind, data: append([]byte(nil), data...)}
	for ch := range f.subs {
		select {
		case ch <- c:
		default:
			delete(f.subs, ch)
			close(ch)
		}
	}
}

// writer is the io.Writer of one output stream, for io.TeeReader.
func (f *fanout) writer(kind byte) *fanoutWriter { return &fanoutWriter{f: f, kind: kind} }

type fanoutWriter struct {
	f    *fanout
	kind byte
}

func (w *fanoutWriter) Write(p []byte) (int, error) {
	w.f.send(w.kind, p)
	return len(p), nil
}

// close ends every subscription; later subscribes fail.
func (f *fanout) close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed = true
	for ch := range f.subs {
		close(ch)
	}
	f.subs = map[chan chunk]struct{}{}
}

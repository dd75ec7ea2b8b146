package cri

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/crib-dev/crib/internal/container"
)

// ListContainers lists containers from memory, filtered by id (or prefix),
// sandbox id (or prefix), state and label selector.
//
// The kubelet lists every container every second. Each one's entry is
// encoded once per state it is listed in (listEntries) and the response
// carries the entries as they are on the wire: in its unknown fields,
// which a protobuf encoder writes out as they are, so that the client reads
// the repeated containers field. Only the encoded response is built here.
func (s *Server) ListContainers(_ context.Context, req *runtimeapi.ListContainersRequest) (*runtimeapi.ListContainersResponse, error) {
	entries, err := s.containerEntries(req.GetFilter())
	if err != nil {
		return nil, err
	}
	resp := &runtimeapi.ListContainersResponse{}
	resp.ProtoReflect().SetUnknown(slices.Concat(entries...))
	return resp, nil
}

// StreamContainers is ListContainers sent in chunks (KEP-5825), each a
// response of up to streamChunkBytes of entries (field 1 of both
// messages).
func (s *Server) StreamContainers(req *runtimeapi.StreamContainersRequest, stream runtimeapi.RuntimeService_StreamContainersServer) error {
	entries, err := s.containerEntries(req.GetFilter())
	if err != nil {
		return err
	}
	return sendChunksOf(entries, func(e []byte) int { return len(e) }, func(chunk [][]byte) error {
		resp := &runtimeapi.StreamContainersResponse{}
		resp.ProtoReflect().SetUnknown(slices.Concat(chunk...))
		return stream.Send(resp)
	})
}

// containerEntries returns the encoded entries of the containers f
// selects, oldest first.
func (s *Server) containerEntries(f *runtimeapi.ContainerFilter) ([][]byte, error) {
	if err := checkContainerFilter(f); err != nil {
		return nil, err
	}
	gen := s.listEntries.gen.Add(1)
	var entries [][]byte
	for _, c := range s.containers.List() {
		state := containerState(c)
		s.listEntries.seen(c.ID, gen)
		switch {
		case f.GetId() != "" && !strings.HasPrefix(c.ID, f.GetId()):
		case f.GetPodSandboxId() != "" && !strings.HasPrefix(c.SandboxID, f.GetPodSandboxId()):
		case f.GetState() != nil && f.GetState().GetState() != state:
		case !matchLabels(f.GetLabelSelector(), c.Config.GetLabels()):
		default:
			entry, err := s.listEntries.get(c, state, gen)
			if err != nil {
				return nil, err
			}
			entries = append(entries, entry)
		}
	}
	if gen%pruneEvery == 0 {
		s.listEntries.prune(gen)
	}
	return entries, nil
}

// pruneEvery is how many lists go by between two prunings of the cache.
const pruneEvery = 64

// listEntryCache holds each listed container's entry of
// ListContainersResponse (field 1, tag and length included) as encoded for
// the state it was in: nothing else of an entry changes while the
// container lives.
type listEntryCache struct {
	byID sync.Map // container id -> *listEntry
	// gen counts ListContainers calls; an entry whose container a list
	// did not see belongs to a removed container.
	gen atomic.Uint64
}

type listEntry struct {
	state runtimeapi.ContainerState
	wire  []byte
	seen  atomic.Uint64
}

// seen marks id's entry, if any, as listed in generation gen.
func (l *listEntryCache) seen(id string, gen uint64) {
	if v, ok := l.byID.Load(id); ok {
		v.(*listEntry).seen.Store(gen)
	}
}

// get returns c's encoded entry in state, encoding it if needed.
func (l *listEntryCache) get(c container.Container, state runtimeapi.ContainerState, gen uint64) ([]byte, error) {
	if v, ok := l.byID.Load(c.ID); ok {
		if e := v.(*listEntry); e.state == state {
			return e.wire, nil // marked seen by the caller
		}
	}
	item := containerItem(c)
	item.State = state
	b, err := proto.Marshal(item)
	if err != nil {
		return nil, fmt.Errorf("encode container %s: %w", c.ID, err)
	}
	wire := protowire.AppendTag(make([]byte, 0, len(b)+8), 1, protowire.BytesType)
	wire = protowire.AppendBytes(wire, b)
	e := &listEntry{state: state, wire: wire}
	e.seen.Store(gen)
	l.byID.Store(c.ID, e)
	return wire, nil
}

// forget drops the entry of the container id, removed: a node that lists
// no more after a teardown would keep it until the next pruning.
func (l *listEntryCache) forget(id string) { l.byID.Delete(id) }

// forgetAll drops the entries of the containers ids (a sandbox's, removed
// with it). The caller names them, from the sandbox's index, rather than
// this ranging over the node's entries at every pod's removal.
func (l *listEntryCache) forgetAll(ids []string) {
	for _, id := range ids {
		l.byID.Delete(id)
	}
}

// prune forgets the entries whose containers the list of generation gen
// did not see (every list sees every container; filters apply after). One
// seen by a later list, in flight meanwhile, stays.
func (l *listEntryCache) prune(gen uint64) {
	l.byID.Range(func(id, v any) bool {
		if v.(*listEntry).seen.Load() < gen {
			l.byID.Delete(id)
		}
		return true
	})
}

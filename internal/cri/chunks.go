package cri

import (
	"google.golang.org/protobuf/proto"
)

// streamChunkBytes bounds one response of a Stream* list RPC (KEP-5825).
// Those RPCs exist because a list of thousands of containers can pass
// gRPC's default 16 MiB message limit; 1 MiB keeps every response far
// below it while a thousand small items still go in a few messages.
const streamChunkBytes = 1 << 20

// sendChunks sends items in order, as few at a time as fit in
// streamChunkBytes (always at least one, so an item larger than the bound
// still goes alone). An empty list sends nothing: the stream's end says
// the list is complete.
func sendChunks[T proto.Message](items []T, send func([]T) error) error {
	return sendChunksOf(items, func(item T) int { return proto.Size(item) }, send)
}

// sendChunksOf is sendChunks for items whose encoded size is size(item).
func sendChunksOf[T any](items []T, size func(T) int, send func([]T) error) error {
	start, total := 0, 0
	for i, item := range items {
		n := size(item)
		if i > start && total+n > streamChunkBytes {
			if err := send(items[start:i]); err != nil {
				return err
			}
			start, total = i, 0
		}
		total += n
	}
	if start < len(items) {
		return send(items[start:])
	}
	return nil
}

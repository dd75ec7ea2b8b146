package userns

import (
	"fmt"
	"math/bits"
)

// Allocator hands out the blocks of a node's range, one per pod. It is pure
// and not safe for concurrent use (the Manager guards it).
type Allocator struct {
	node Range
	// used has one bit per block of node, set while a pod holds it.
	used []uint64
	// byPod is the block index each pod holds, by pod UID: the one record
	// of who holds what.
	byPod map[string]int
}

// NewAllocator returns an allocator of node's blocks, none taken.
func NewAllocator(node Range) (*Allocator, error) {
	if err := node.CheckNode(); err != nil {
		return nil, err
	}
	blocks := int(node.Length / BlockSize)
	return &Allocator{node: node, used: make([]uint64, (blocks+63)/64), byPod: map[string]int{}}, nil
}

// Node is the range the allocator hands out.
func (a *Allocator) Node() Range { return a.node }

func (a *Allocator) blocks() int { return int(a.node.Length / BlockSize) }

func (a *Allocator) block(i int) Range {
	return Range{First: a.node.First + uint32(i)*BlockSize, Length: BlockSize}
}

func (a *Allocator) taken(i int) bool { return a.used[i/64]&(1<<(i%64)) != 0 }

// Get returns the block pod uid holds.
func (a *Allocator) Get(uid string) (Range, bool) {
	i, ok := a.byPod[uid]
	if !ok {
		return Range{}, false
	}
	return a.block(i), true
}

// Allocate returns the block pod uid holds, giving it the lowest free one
// first if it holds none; ErrExhausted when none is free.
func (a *Allocator) Allocate(uid string) (Range, error) {
	if r, ok := a.Get(uid); ok {
		return r, nil
	}
	n := a.blocks()
	for w, word := range a.used {
		if word == ^uint64(0) {
			continue
		}
		i := w*64 + bits.TrailingZeros64(^word)
		if i >= n {
			break
		}
		a.take(uid, i)
		return a.block(i), nil
	}
	return Range{}, ErrExhausted
}

// Record marks r as the block of pod uid, as read back from the pod's
// directory. r must be one whole block of the node's range, and no other
// pod's; recording a pod's own block again is fine.
func (a *Allocator) Record(uid string, r Range) error {
	if r.Length != BlockSize {
		return fmt.Errorf("range %s of pod %s: length is not %d", r, uid, BlockSize)
	}
	if r.First < a.node.First || r.end() > a.node.end() || (r.First-a.node.First)%BlockSize != 0 {
		return fmt.Errorf("range %s of pod %s: not a block of the node's range %s", r, uid, a.node)
	}
	i := int((r.First - a.node.First) / BlockSize)
	if held, ok := a.byPod[uid]; ok {
		if held == i {
			return nil
		}
		return fmt.Errorf("range %s of pod %s: the pod holds %s already", r, uid, a.block(held))
	}
	if a.taken(i) {
		return fmt.Errorf("range %s of pod %s: another pod holds it", r, uid)
	}
	a.take(uid, i)
	return nil
}

func (a *Allocator) take(uid string, i int) {
	a.used[i/64] |= 1 << (i % 64)
	a.byPod[uid] = i
}

// Release frees the block of pod uid; a pod holding none is fine.
func (a *Allocator) Release(uid string) {
	i, ok := a.byPod[uid]
	if !ok {
		return
	}
	delete(a.byPod, uid)
	a.used[i/64] &^= 1 << (i % 64)
}

// Held is how many pods hold a block.
func (a *Allocator) Held() int { return len(a.byPod) }

package userns

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func newAllocator(t *testing.T, node Range) *Allocator {
	t.Helper()
	a, err := NewAllocator(node)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestAllocateDisjointBlocks(t *testing.T) {
	a := newAllocator(t, Range{First: 131072, Length: 200 * BlockSize})
	seen := map[uint32]string{}
	for i := range 200 {
		uid := fmt.Sprintf("pod-%d", i)
		r, err := a.Allocate(uid)
		if err != nil {
			t.Fatalf("pod %d: %v", i, err)
		}
		if r.Length != BlockSize || r.First%BlockSize != 0 || r.First < 131072 || uint64(r.First)+BlockSize > 131072+200*BlockSize {
			t.Fatalf("pod %d got %s, not a block of the node's range", i, r)
		}
		if other, dup := seen[r.First]; dup {
			t.Fatalf("pods %s and %s both got %s", other, uid, r)
		}
		seen[r.First] = uid
		// Asking again gives the same block.
		if again, err := a.Allocate(uid); err != nil || again != r {
			t.Fatalf("pod %d again: %s, %v; want %s", i, again, err, r)
		}
	}
	if _, err := a.Allocate("one-more"); !errors.Is(err, ErrExhausted) {
		t.Fatalf("201st pod: err = %v, want ErrExhausted", err)
	}
	if a.Held() != 200 {
		t.Fatalf("held %d, want 200", a.Held())
	}
}

func TestReleaseFreesTheBlock(t *testing.T) {
	a := newAllocator(t, Range{First: BlockSize, Length: 3 * BlockSize})
	r0, _ := a.Allocate("a")
	r1, _ := a.Allocate("b")
	r2, _ := a.Allocate("c")
	if r0.First != BlockSize || r1.First != 2*BlockSize || r2.First != 3*BlockSize {
		t.Fatalf("got %s %s %s, want the blocks lowest first", r0, r1, r2)
	}
	if _, err := a.Allocate("d"); !errors.Is(err, ErrExhausted) {
		t.Fatalf("err = %v, want ErrExhausted", err)
	}
	a.Release("b")
	a.Release("b")       // twice is fine
	a.Release("unknown") // so is a pod holding none
	if _, ok := a.Get("b"); ok {
		t.Fatal("b still holds a block after Release")
	}
	got, err := a.Allocate("d")
	if err != nil || got != r1 {
		t.Fatalf("d got %s, %v; want b's freed %s", got, err, r1)
	}
	if r, ok := a.Get("a"); !ok || r != r0 {
		t.Fatalf("a holds %s %v, want %s", r, ok, r0)
	}
}

func TestRecordRecovers(t *testing.T) {
	node := Range{First: BlockSize, Length: 4 * BlockSize}
	tests := []struct {
		name    string
		records map[string]Range // recorded in order of uid
		uid     string
		r       Range
		wantErr string
	}{
		{name: "a block of the range", uid: "p", r: Range{3 * BlockSize, BlockSize}},
		{name: "the last block", uid: "p", r: Range{4 * BlockSize, BlockSize}},
		{name: "the pod's own block again", records: map[string]Range{"p": {2 * BlockSize, BlockSize}}, uid: "p", r: Range{2 * BlockSize, BlockSize}},
		{name: "another pod's block", records: map[string]Range{"q": {2 * BlockSize, BlockSize}}, uid: "p", r: Range{2 * BlockSize, BlockSize}, wantErr: "another pod holds it"},
		{name: "a second block for the pod", records: map[string]Range{"p": {2 * BlockSize, BlockSize}}, uid: "p", r: Range{3 * BlockSize, BlockSize}, wantErr: "holds"},
		{name: "wrong length", uid: "p", r: Range{2 * BlockSize, 2 * BlockSize}, wantErr: "length"},
		{name: "below the range", uid: "p", r: Range{0, BlockSize}, wantErr: "not a block"},
		{name: "past the range", uid: "p", r: Range{5 * BlockSize, BlockSize}, wantErr: "not a block"},
		{name: "not aligned", uid: "p", r: Range{BlockSize + 1, BlockSize}, wantErr: "not a block"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := newAllocator(t, node)
			for uid, r := range tt.records {
				if err := a.Record(uid, r); err != nil {
					t.Fatal(err)
				}
			}
			err := a.Record(tt.uid, tt.r)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got, ok := a.Get(tt.uid); !ok || got != tt.r {
				t.Fatalf("pod holds %s %v, want %s", got, ok, tt.r)
			}
		})
	}
}

func TestAllocateSkipsRecordedBlocks(t *testing.T) {
	a := newAllocator(t, Range{First: BlockSize, Length: 3 * BlockSize})
	if err := a.Record("old", Range{BlockSize, BlockSize}); err != nil {
		t.Fatal(err)
	}
	if err := a.Record("older", Range{3 * BlockSize, BlockSize}); err != nil {
		t.Fatal(err)
	}
	r, err := a.Allocate("new")
	if err != nil || r.First != 2*BlockSize {
		t.Fatalf("new got %s, %v; want the one free block %d", r, err, 2*BlockSize)
	}
	if _, err := a.Allocate("newer"); !errors.Is(err, ErrExhausted) {
		t.Fatalf("err = %v, want ErrExhausted", err)
	}
}

func TestAllocateAcrossWords(t *testing.T) {
	// 130 blocks: the bitmap's third word is partly past the range.
	a := newAllocator(t, Range{First: BlockSize, Length: 130 * BlockSize})
	for i := range 130 {
		if _, err := a.Allocate(fmt.Sprint(i)); err != nil {
			t.Fatalf("pod %d: %v", i, err)
		}
	}
	if _, err := a.Allocate("x"); !errors.Is(err, ErrExhausted) {
		t.Fatalf("err = %v, want ErrExhausted, not a block past the range", err)
	}
	a.Release("129")
	if r, err := a.Allocate("x"); err != nil || r.First != 130*BlockSize {
		t.Fatalf("x got %s, %v; want the last block %d", r, err, 130*BlockSize)
	}
}

func TestNewAllocatorChecksTheRange(t *testing.T) {
	if _, err := NewAllocator(Range{First: 0, Length: BlockSize}); err == nil {
		t.Fatal("a range mapping host root was accepted")
	}
}

package cri

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestSendChunks(t *testing.T) {
	item := func(i, size int) *runtimeapi.Container {
		return &runtimeapi.Container{Id: fmt.Sprint(i), Labels: map[string]string{"pad": strings.Repeat("x", size)}}
	}
	tests := []struct {
		name   string
		sizes  []int
		chunks int
	}{
		{"empty list sends nothing", nil, 0},
		{"small items go in one chunk", []int{10, 10, 10}, 1},
		{"a thousand small items", repeat(1000, 200), 1},
		{"split at the bound", repeat(6, streamChunkBytes/4), 2},
		{"an item over the bound goes alone", []int{10, 2 * streamChunkBytes, 10}, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var items []*runtimeapi.Container
			for i, s := range tt.sizes {
				items = append(items, item(i, s))
			}
			var got [][]*runtimeapi.Container
			err := sendChunks(items, func(c []*runtimeapi.Container) error {
				got = append(got, c)
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != tt.chunks {
				t.Errorf("%d chunks, want %d", len(got), tt.chunks)
			}
			next := 0
			for _, c := range got {
				size := 0
				for _, it := range c {
					if it.Id != fmt.Sprint(next) {
						t.Fatalf("item %s where %d was due: items lost, repeated or reordered", it.Id, next)
					}
					next++
					size += proto.Size(it)
				}
				if len(c) > 1 && size > streamChunkBytes {
					t.Errorf("a chunk of %d items holds %d bytes, over the bound %d", len(c), size, streamChunkBytes)
				}
			}
			if next != len(items) {
				t.Errorf("%d items sent, want %d", next, len(items))
			}
		})
	}
	t.Run("a failed send ends the stream", func(t *testing.T) {
		items := []*runtimeapi.Container{item(0, streamChunkBytes), item(1, streamChunkBytes)}
		calls := 0
		boom := errors.New("client gone")
		err := sendChunks(items, func([]*runtimeapi.Container) error { calls++; return boom })
		if !errors.Is(err, boom) || calls != 1 {
			t.Errorf("err %v after %d sends, want %v after 1", err, calls, boom)
		}
	})
}

func repeat(n, size int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = size
	}
	return s
}

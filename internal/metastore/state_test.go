package metastore

import (
	"path/filepath"
	"strconv"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	bolt "go.etcd.io/bbolt"
)

type rec struct {
	Name string
	N    int
}

func TestPutForEachDelete(t *testing.T) {
	path := filepath.Join(t.TempDir(), "meta.db")
	db, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Put("things", "a", 1, rec{"a", 1}); err != nil {
		t.Fatal(err)
	}
	if err := db.Put("things", "b", 2, rec{"b", 2}); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	db, err = Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	got := map[string]rec{}
	var bad []string
	err = db.ForEach("things", []int{1}, func(id string, decode func(any) error) error {
		var r rec
		if err := decode(&r); err != nil {
			bad = append(bad, id)
			return nil
		}
		got[id] = r
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]rec{"a": {"a", 1}}, got); diff != "" {
		t.Errorf("records (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"b"}, bad); diff != "" {
		t.Errorf("records refused for their version (-want +got):\n%s", diff)
	}

	if err := db.Delete("things", "a"); err != nil {
		t.Fatal(err)
	}
	if err := db.Delete("things", "a"); err != nil {
		t.Fatalf("second delete: %v", err)
	}
	if err := db.Delete("nothing", "x"); err != nil {
		t.Fatalf("delete from a missing bucket: %v", err)
	}
	n := 0
	_ = db.ForEach("things", []int{1, 2}, func(string, func(any) error) error { n++; return nil })
	if n != 1 {
		t.Errorf("records after delete = %d, want 1", n)
	}
}

func TestDeleteAll(t *testing.T) {
	db, err := Open(filepath.Join(t.TempDir(), "meta.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, id := range []string{"a", "b", "c"} {
		if err := db.Put("things", id, 1, rec{id, 1}); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.DeleteAll("things", []string{"a", "c", "missing"}); err != nil {
		t.Fatal(err)
	}
	if err := db.DeleteAll("nothing", []string{"x"}); err != nil {
		t.Fatalf("delete from a missing bucket: %v", err)
	}
	var left []string
	_ = db.ForEach("things", []int{1}, func(id string, _ func(any) error) error { left = append(left, id); return nil })
	if diff := cmp.Diff([]string{"b"}, left); diff != "" {
		t.Errorf("records left (-want +got):\n%s", diff)
	}
}

// TestConcurrentWritesShareCommits: writers that run at once, grouped into
// shared transactions, each find their record written on return, and one
// that fails (a kind bbolt refuses) fails alone, not the writes that
// shared its transaction.
func TestConcurrentWritesShareCommits(t *testing.T) {
	db, err := Open(filepath.Join(t.TempDir(), "meta.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	const writers = 64
	errs := make([]error, writers)
	var wg sync.WaitGroup
	for i := range writers {
		wg.Go(func() {
			kind := "things"
			if i == writers/2 {
				kind = "" // bbolt: a bucket name is required
			}
			id := strconv.Itoa(i)
			if errs[i] = db.Put(kind, id, 1, rec{id, i}); errs[i] != nil {
				return
			}
			if i%2 == 0 {
				errs[i] = db.Delete(kind, id)
			}
		})
	}
	wg.Wait()
	got := map[string]bool{}
	err = db.ForEach("things", []int{1}, func(id string, _ func(any) error) error {
		got[id] = true
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for i, err := range errs {
		id := strconv.Itoa(i)
		switch {
		case i == writers/2:
			if err == nil {
				t.Errorf("writer %d (kind \"\"): no error", i)
			}
		case err != nil:
			t.Errorf("writer %d: %v", i, err)
		case got[id] != (i%2 == 1):
			t.Errorf("record %s present = %v after its writer returned; want %v", id, got[id], i%2 == 1)
		}
	}
}

// TestPanickingWriteFailsAlone: a write whose function panics gets an error,
// the writes sharing its transaction are committed, and the store takes
// writes after it.
func TestPanickingWriteFailsAlone(t *testing.T) {
	db, err := Open(filepath.Join(t.TempDir(), "meta.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	const writers = 16
	errs := make([]error, writers)
	var wg sync.WaitGroup
	for i := range writers {
		wg.Go(func() {
			if i == writers/2 {
				errs[i] = db.writes.update(func(*bolt.Tx) error { panic("boom") })
				return
			}
			errs[i] = db.Put("things", strconv.Itoa(i), 1, rec{strconv.Itoa(i), i})
		})
	}
	wg.Wait()
	for i, err := range errs {
		if (err != nil) != (i == writers/2) {
			t.Errorf("writer %d: err = %v", i, err)
		}
	}
	if err := db.Put("things", "after", 1, rec{"after", 0}); err != nil {
		t.Fatalf("a write after the panic: %v", err)
	}
	n := 0
	if err := db.ForEach("things", []int{1}, func(string, func(any) error) error { n++; return nil }); err != nil {
		t.Fatal(err)
	}
	if n != writers {
		t.Errorf("%d records, want %d", n, writers)
	}
}

package statusapi

import (
	"sort"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// SourceError is a manifest the agent could not use, and why.
type SourceError struct {
	Path    string `json:"path"`
	Message string `json:"message"`
}

// Store holds the latest pod and status per UID, and the manifest errors of
// the last source scan. The zero value is not usable; call NewStore.
type Store struct {
	mu     sync.RWMutex
	pods   map[types.UID]*corev1.Pod
	errors []SourceError
}

// NewStore returns an empty store.
func NewStore() *Store {
	return &Store{pods: map[types.UID]*corev1.Pod{}}
}

// Set records pod with st as its status. Both are copied; a nil pod is
// ignored.
func (s *Store) Set(pod *corev1.Pod, st corev1.PodStatus) {
	if pod == nil {
		return
	}
	p := pod.DeepCopy()
	st.DeepCopyInto(&p.Status)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pods[p.UID] = p
}

// Delete forgets the pod with uid; unknown UIDs are ignored.
func (s *Store) Delete(uid types.UID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.pods, uid)
}

// Get returns a copy of the pod with uid, its status set.
func (s *Store) Get(uid types.UID) (*corev1.Pod, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	p, ok := s.pods[uid]
	if !ok {
		return nil, false
	}
	return p.DeepCopy(), true
}

// Lookup returns a copy of the pod named namespace/name.
func (s *Store) Lookup(namespace, name string) (*corev1.Pod, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	for _, p := range s.pods {
		if p.Namespace == namespace && p.Name == name {
			return p.DeepCopy(), true
		}
	}
	return nil, false
}

// List returns every pod, sorted by namespace then name (then UID, when a
// replaced pod and its successor briefly share a name).
func (s *Store) List() *corev1.PodList {
	s.mu.RLock()
	items := make([]corev1.Pod, 0, len(s.pods))
	for _, p := range s.pods {
		items = append(items, *p.DeepCopy())
	}
	s.mu.RUnlock()
	sort.Slice(items, func(i, j int) bool {
		a, b := &items[i], &items[j]
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		if a.Name != b.Name {
			return a.Name < b.Name
		}
		return a.UID < b.UID
	})
	return &corev1.PodList{TypeMeta: metav1.TypeMeta{Kind: "PodList", APIVersion: "v1"}, Items: items}
}

// SetSourceErrors replaces the manifest errors with errs.
func (s *Store) SetSourceErrors(errs []SourceError) {
	cp := append([]SourceError(nil), errs...)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.errors = cp
}

// SourceErrors returns the manifest errors, sorted by path; never nil.
func (s *Store) SourceErrors() []SourceError {
	s.mu.RLock()
	out := append([]SourceError{}, s.errors...)
	s.mu.RUnlock()
	sort.SliceStable(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

// Package podworker serialises the work on each pod: one goroutine per pod
// with work to do, never two syncs of one pod at once, and the newest
// request replacing any that has not started yet. A worker exits when its
// pod has nothing pending, so idle pods cost no goroutine.
//
// It knows nothing of pods beyond their UID: what a sync does is the
// caller's SyncFunc.
package podworker

// What wakes the runners when the VNF step has just changed a device or a file (the kick file,
// main.go): a broadcast, because several goroutines of one device wait on it at once (the
// watch, the listener waiting for its address, each initiator waiting for its peer).
package main

import "sync"

// Wakeup wakes every goroutine waiting on it at the moment it fires. A waiter takes C before it
// looks at what it waits for, so a Fire between its look and its wait is not lost. A nil Wakeup
// never fires.
type Wakeup struct {
	mu sync.Mutex
	ch chan struct{}
}

// C is closed by the next Fire.
func (w *Wakeup) C() <-chan struct{} {
	if w == nil {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ch == nil {
		w.ch = make(chan struct{})
	}
	return w.ch
}

// Fire wakes every waiter of C.
func (w *Wakeup) Fire() {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ch != nil {
		close(w.ch)
		w.ch = nil
	}
}

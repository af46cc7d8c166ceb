// What keeps one daemon per VNF and its log bounded.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// lockState takes an exclusive lock on <stateDir>/lock, without waiting: two daemons on one VNF
// would each put back their own agreed keys and make the PSKs flap. The lock is the kernel's
// (flock): it goes with the process, whatever happens to a pid file. The file is kept open for the
// daemon's life (closing it releases the lock) and holds the holder's pid, so that a daemon whose
// pid file was lost can still be found and stopped.
func lockState(stateDir string) (*os.File, error) {
	path := filepath.Join(stateDir, "lock")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			holder, _ := os.ReadFile(path)
			pid, _ := strconv.Atoi(strings.TrimSpace(string(holder[:min(len(holder), 20)])))
			return nil, fmt.Errorf("another pq-psk daemon (pid %d) runs and holds %s: this one exits", pid, path)
		}
		return nil, fmt.Errorf("cannot lock %s: %v", path, err)
	}
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return f, nil
}

// cappedLog is the daemon's log output: when it is a regular file (the VNF step redirects it to
// one on tmpfs, i.e. RAM, for months) it is cut to nothing once the next line would take it past
// max bytes, so it never holds more than max. Anything else (a pipe, the journal) is written as is.
type cappedLog struct {
	mu  sync.Mutex
	f   *os.File
	max int64
}

const logCap = 1 << 20 // the log's size bound (bytes): thousands of lines

func (c *cappedLog) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if off, err := c.f.Seek(0, io.SeekCurrent); err == nil && off+int64(len(p)) > c.max {
		if c.f.Truncate(0) == nil {
			_, _ = c.f.Seek(0, io.SeekStart)
			_, _ = fmt.Fprintf(c.f, "(log cut at %d bytes)\n", off)
		}
	}
	return c.f.Write(p)
}

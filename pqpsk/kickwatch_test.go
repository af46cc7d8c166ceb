package main

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// The kick file created, touched (its times set) and truncated (the VNF step's `: > kick`) is
// seen through inotify each time; each by a watch of its own, added just before, so that no
// event of an earlier change can stand in for it.
func TestWatchKickSeesTheKickFileTouched(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "kick")
	for _, c := range []struct {
		what   string
		change func() error
	}{
		{"created", func() error { return os.WriteFile(path, nil, 0o644) }},
		{"touched", func() error { later := time.Now().Add(time.Hour); return os.Chtimes(path, later, later) }},
		{"truncated", func() error { return os.WriteFile(path, nil, 0o644) }},
	} {
		kicks := watchKick(dir, "kick")
		if kicks == nil {
			t.Fatal("inotify cannot watch a temporary folder")
		}
		if err := c.change(); err != nil {
			t.Fatal(err)
		}
		select {
		case _, ok := <-kicks:
			if !ok {
				t.Fatalf("the kick file %s: the watch ended", c.what)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("the kick file %s: not seen", c.what)
		}
	}
}

func event(name string, pad int) []byte {
	b := make([]byte, syscall.SizeofInotifyEvent+len(name)+pad)
	binary.NativeEndian.PutUint32(b[4:8], syscall.IN_ATTRIB)
	binary.NativeEndian.PutUint32(b[12:16], uint32(len(name)+pad))
	copy(b[syscall.SizeofInotifyEvent:], name)
	return b
}

// Events of other files in the state folder (the status files' temporary copies and renames) do
// not count; a record cut short ends the reading.
func TestKickEventsAreFoundByName(t *testing.T) {
	other := append(event(".wg-s6a.123", 5), event("wg-s6a.status", 3)...)
	if names(other, "kick") {
		t.Fatal("other files' events taken for the kick")
	}
	if !names(append(other, event("kick", 12)...), "kick") {
		t.Fatal("the kick file's event, after others, not found")
	}
	if names(event("kick.old", 8), "kick") || names(event("kic", 1), "kick") {
		t.Fatal("a name that only starts or ends like the kick file's taken for it")
	}
	cut := event("kick", 12)
	if names(cut[:len(cut)-1], "kick") || names(cut[:10], "kick") {
		t.Fatal("a record cut short was read")
	}
}

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

func event(name string, pad int, mask uint32) []byte {
	b := make([]byte, syscall.SizeofInotifyEvent+len(name)+pad)
	binary.NativeEndian.PutUint32(b[4:8], mask)
	binary.NativeEndian.PutUint32(b[12:16], uint32(len(name)+pad))
	copy(b[syscall.SizeofInotifyEvent:], name)
	return b
}

// Events of other files in the state folder (the status files' temporary copies and renames) do
// not count; a record cut short ends the reading; IN_IGNORED says the watch is gone; an overflow
// counts as a kick.
func TestKickEventsAreFoundByName(t *testing.T) {
	is := func(b []byte, found, gone bool) bool {
		f, g := names(b, "kick")
		return f == found && g == gone
	}
	other := append(event(".wg-s6a.123", 5, syscall.IN_CREATE), event("wg-s6a.status", 3, syscall.IN_MOVED_TO)...)
	if !is(other, false, false) {
		t.Fatal("other files' events taken for the kick")
	}
	if !is(append(other, event("kick", 12, syscall.IN_ATTRIB)...), true, false) {
		t.Fatal("the kick file's event, after others, not found")
	}
	if !is(event("kick.old", 8, syscall.IN_ATTRIB), false, false) || !is(event("kic", 1, syscall.IN_ATTRIB), false, false) {
		t.Fatal("a name that only starts or ends like the kick file's taken for it")
	}
	cut := event("kick", 12, syscall.IN_ATTRIB)
	if !is(cut[:len(cut)-1], false, false) || !is(cut[:10], false, false) {
		t.Fatal("a record cut short was read")
	}
	if !is(append(event("kick", 12, syscall.IN_ATTRIB), event("", 0, syscall.IN_IGNORED)...), true, true) {
		t.Fatal("the watch's end not seen")
	}
	if !is(append(other, event("", 0, syscall.IN_Q_OVERFLOW)...), true, false) {
		t.Fatal("an overflow of the kernel's queue (the kick may be among what it dropped) not taken for a kick")
	}
}

// The state folder removed: the watch's channel is closed, so that the daemon looks by itself.
func TestWatchKickEndsWhenItsFolderGoes(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	kicks := watchKick(dir, "kick")
	if kicks == nil {
		t.Fatal("inotify cannot watch a temporary folder")
	}
	if err := os.Remove(dir); err != nil {
		t.Fatal(err)
	}
	deadline := time.After(10 * time.Second)
	for {
		select {
		case _, ok := <-kicks:
			if !ok {
				return
			}
		case <-deadline:
			t.Fatal("the watch of a removed folder did not end")
		}
	}
}

package main

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// The kick file touched (created, then its times set as `touch` does) is seen through inotify.
func TestWatchKickSeesTheKickFileTouched(t *testing.T) {
	dir := t.TempDir()
	kicks := watchKick(dir, "kick")
	if kicks == nil {
		t.Fatal("inotify cannot watch a temporary folder")
	}
	expect := func(what string) {
		t.Helper()
		select {
		case _, ok := <-kicks:
			if !ok {
				t.Fatalf("%s: the watch ended", what)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: not seen", what)
		}
	}
	path := filepath.Join(dir, "kick")
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	expect("the kick file created")
	for len(kicks) > 0 { // the creation's events, coalesced
		<-kicks
	}
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(path, later, later); err != nil {
		t.Fatal(err)
	}
	expect("the kick file touched")
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

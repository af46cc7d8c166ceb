// The kick file watched with inotify: the VNF step touches it right after it changed a device or
// a file, and the daemon acts on it at once rather than at its next look (it looked every 200 ms:
// up to 0.2 s on the way to every new peer's first exchange, twice in a step that writes the file
// and then the device). Written with the syscall package: Linux's inotify is all it needs, and the
// daemon uses the standard library only.
package main

import (
	"bytes"
	"encoding/binary"
	"errors"
	"log"
	"syscall"
)

// kickMask: touch (attributes), a write, a creation, a rename into place.
const kickMask = syscall.IN_ATTRIB | syscall.IN_CLOSE_WRITE | syscall.IN_CREATE | syscall.IN_MOVED_TO

// watchKick returns a channel that receives (coalesced) when a file named name in dir is touched,
// written or created, and is closed should inotify fail later; nil when inotify cannot watch dir.
// Either way the caller then looks by itself.
func watchKick(dir, name string) <-chan struct{} {
	fd, err := syscall.InotifyInit1(syscall.IN_CLOEXEC)
	if err != nil {
		log.Printf("no inotify (%v): the kick file is looked at every 200 ms", err)
		return nil
	}
	if _, err := syscall.InotifyAddWatch(fd, dir, kickMask); err != nil {
		syscall.Close(fd)
		log.Printf("no inotify on %s (%v): the kick file is looked at every 200 ms", dir, err)
		return nil
	}
	ch := make(chan struct{}, 1)
	go func() {
		buf := make([]byte, 64*1024)
		for {
			n, err := syscall.Read(fd, buf)
			if errors.Is(err, syscall.EINTR) {
				continue
			}
			if err != nil || n <= 0 {
				log.Printf("inotify read failed (%v): the kick file is looked at every 200 ms", err)
				syscall.Close(fd)
				close(ch)
				return
			}
			found, gone := names(buf[:n], name)
			if found {
				select {
				case ch <- struct{}{}:
				default:
				}
			}
			if gone { // the folder was removed or moved: this watch sees nothing more
				log.Printf("the state folder's watch ended: the kick file is looked at every 200 ms")
				syscall.Close(fd)
				close(ch)
				return
			}
		}
	}()
	return ch
}

// names tells whether one of the inotify events in b (struct inotify_event: wd, mask, cookie and
// len, 4 bytes each in the machine's order, then len bytes of NUL-padded name) is for name, and
// whether the watch is gone (IN_IGNORED: the folder was removed, or its file system unmounted).
// An overflow of the kernel's queue (IN_Q_OVERFLOW) counts as found: the events it dropped may
// have held the kick. A record cut short ends the reading: the kernel never writes one.
func names(b []byte, name string) (found, gone bool) {
	for len(b) >= syscall.SizeofInotifyEvent {
		mask := binary.NativeEndian.Uint32(b[4:8])
		if mask&syscall.IN_IGNORED != 0 {
			gone = true
		}
		if mask&syscall.IN_Q_OVERFLOW != 0 {
			found = true
		}
		n := int(binary.NativeEndian.Uint32(b[12:16]))
		if n > len(b)-syscall.SizeofInotifyEvent {
			return found, gone
		}
		got := b[syscall.SizeofInotifyEvent : syscall.SizeofInotifyEvent+n]
		if i := bytes.IndexByte(got, 0); i >= 0 {
			got = got[:i]
		}
		if string(got) == name {
			found = true
		}
		b = b[syscall.SizeofInotifyEvent+n:]
	}
	return found, gone
}

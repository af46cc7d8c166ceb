package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestMain lets a test run this program's main as a child process (PQPSK_TEST_MAIN=1).
func TestMain(m *testing.M) {
	if os.Getenv("PQPSK_TEST_MAIN") == "1" {
		os.Args = append(os.Args[:1], strings.Fields(os.Getenv("PQPSK_TEST_ARGS"))...)
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// A second daemon on the same state folder exits at once with a clear message, and the first
// keeps running; once the first is gone the lock is free again.
func TestASecondDaemonExitsWhileTheFirstHoldsTheLock(t *testing.T) {
	dir := t.TempDir()
	conf, state := filepath.Join(dir, "conf"), filepath.Join(dir, "state")
	if err := os.Mkdir(conf, 0o700); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	daemon := func() *exec.Cmd {
		c := exec.CommandContext(ctx, os.Args[0]) // a second daemon that runs is ended at 5 s
		c.Env = append(os.Environ(), "PQPSK_TEST_MAIN=1", "PQPSK_TEST_ARGS=run -config "+conf+" -state "+state)
		return c
	}
	first := daemon()
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { first.Process.Kill(); first.Wait() }()
	waitFor(t, 5*time.Second, "the first daemon took no lock", func() bool {
		_, err := os.Stat(filepath.Join(state, "lock"))
		return err == nil
	})
	waitFor(t, 5*time.Second, "the lock file does not name the first daemon", func() bool {
		b, _ := os.ReadFile(filepath.Join(state, "lock"))
		return string(b) == fmt.Sprintf("%d\n", first.Process.Pid)
	})
	out, err := daemon().CombinedOutput()
	if err == nil || !strings.Contains(string(out), fmt.Sprintf("another pq-psk daemon (pid %d) runs", first.Process.Pid)) {
		t.Fatalf("a second daemon did not refuse to run: %v %q", err, out)
	}
	if first.Process.Signal(syscall.Signal(0)) != nil {
		t.Fatal("the first daemon ended")
	}
	first.Process.Kill()
	first.Wait()
	l, err := lockState(state)
	if err != nil {
		t.Fatalf("the lock was not released with its daemon: %v", err)
	}
	l.Close()
}

// The log never grows past its bound; the latest lines are kept.
func TestTheLogIsCutAtItsBound(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "log"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	c := &cappedLog{f: f, max: 400}
	for i := 0; i < 200; i++ {
		fmt.Fprintf(c, "line %03d of a daemon that runs for months\n", i)
	}
	data, _ := os.ReadFile(f.Name())
	if len(data) > 400 || !strings.HasSuffix(string(data), "line 199 of a daemon that runs for months\n") {
		t.Fatalf("%d bytes: %q", len(data), data)
	}
}

// The daemon's "ready" goes into the starting step's FIFO at once, and never blocks the daemon or
// writes into anything that is not a FIFO.
func TestSignalReady(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "ready")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	r, err := os.OpenFile(fifo, os.O_RDWR, 0) // as the step holds it: read and write, no wait
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	signalReady(fifo)
	buf := make([]byte, 16)
	n, err := r.Read(buf)
	if err != nil || string(buf[:n]) != "ready\n" {
		t.Fatalf("read %q, %v", buf[:n], err)
	}
	// No reader: nothing to tell, and no wait.
	lone := filepath.Join(dir, "lone")
	if err := syscall.Mkfifo(lone, 0o600); err != nil {
		t.Fatal(err)
	}
	signalReady(lone)
	// A regular file is left as it was; a missing path is not created; "" is nothing.
	plain := filepath.Join(dir, "plain")
	if err := os.WriteFile(plain, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	signalReady(plain)
	signalReady(filepath.Join(dir, "missing"))
	signalReady("")
	if data, _ := os.ReadFile(plain); string(data) != "x" {
		t.Fatalf("a regular file was written: %q", data)
	}
	if _, err := os.Stat(filepath.Join(dir, "missing")); !os.IsNotExist(err) {
		t.Fatalf("a missing path was created: %v", err)
	}
}

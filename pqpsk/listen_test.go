package main

import (
	"context"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A flood of connections from an address that is no configured peer (the listener is reachable
// from the underlay): every one is counted, but the status file is written at most once a second,
// and the last count is written when the runner ends.
func TestRefusedConnectionsAreSavedAtMostOnceASecond(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	port := freePort(t)
	b := key(2) // responds to key(1); nobody initiates
	conf := &DeviceConf{Device: "wg-test", Public: b, Listen: netip.AddrPortFrom(netip.MustParseAddr("127.0.0.2"), port),
		Interval: 100, Peers: []PeerConf{{Pub: key(1), Addr: netip.MustParseAddr("127.0.0.1")}}}
	r := &Runner{Conf: conf, Dev: &fakeDev{pub: b, psk: map[[keyLen]byte][keyLen]byte{}, shakes: map[[keyLen]byte]int64{}},
		States: NewStates("wg-test"), StateDir: t.TempDir(), RetryMin: time.Hour, Watch: time.Hour}
	done := make(chan struct{})
	go func() { defer close(done); r.Run(ctx) }()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.3")}, Timeout: time.Second}
	waitFor(t, 3*time.Second, "the listener does not listen", func() bool {
		c, err := d.Dial("tcp", net.JoinHostPort("127.0.0.2", itoa(int(port))))
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	waitFor(t, 3*time.Second, "the first refusal is not counted", func() bool {
		r.States.mu.Lock()
		defer r.States.mu.Unlock()
		return r.States.other == 1
	})
	r.States.mu.Lock()
	before := r.States.saves
	r.States.mu.Unlock()
	start := time.Now()
	const flood = 60
	for i := 0; i < flood; i++ {
		c, err := d.Dial("tcp", net.JoinHostPort("127.0.0.2", itoa(int(port))))
		if err != nil {
			t.Fatal(err)
		}
		c.Close()
		// one at a time: a connection over maxConns would be closed uncounted
		waitFor(t, 3*time.Second, "a refusal is not counted", func() bool {
			r.States.mu.Lock()
			defer r.States.mu.Unlock()
			return r.States.other == uint64(i+2)
		})
	}
	r.States.mu.Lock()
	writes := r.States.saves - before
	r.States.mu.Unlock()
	if limit := uint64(time.Since(start)/time.Second) + 2; writes > limit {
		t.Fatalf("%d connections wrote the status file %d times in %s", flood, writes, time.Since(start))
	}
	cancel()
	<-done
	data, _ := os.ReadFile(filepath.Join(r.StateDir, "wg-test.status"))
	if !strings.HasPrefix(string(data), "device wg-test refusals 61 ") {
		t.Fatalf("the last count was not written at the end: %q", strings.SplitN(string(data), "\n", 2)[0])
	}
}

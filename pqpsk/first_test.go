package main

import (
	"context"
	"net"
	"net/netip"
	"sync"
	"testing"
	"time"
)

// A responder written out here on a listener the test bound itself (port 0: no port chosen and
// bound later): it closes the first `refuse` connections at once, as a daemon that does not list
// the initiator yet does, and answers the others; onAccept sees each connection first.
func testResponder(t *testing.T, ctx context.Context, own, peer [keyLen]byte, refuse int, onAccept func()) (uint16, func() ([keyLen]byte, bool)) {
	ln, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var agreed [keyLen]byte
	var ok bool
	done := make(chan struct{})
	go func() { <-ctx.Done(); ln.Close() }()
	go func() {
		defer close(done)
		for n := 0; ; n++ {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			onAccept()
			if n < refuse {
				c.Close()
				continue
			}
			resp := &Responder{Own: own, Peer: peer, Accept: func(uint64) bool { return true }}
			_, _ = resp.Respond(c, func(psk [keyLen]byte) error {
				mu.Lock()
				defer mu.Unlock()
				agreed, ok = psk, true
				return nil
			})
			c.Close()
		}
	}()
	t.Cleanup(func() { <-done })
	return uint16(ln.Addr().(*net.TCPAddr).Port), func() ([keyLen]byte, bool) {
		mu.Lock()
		defer mu.Unlock()
		return agreed, ok
	}
}

func initiator(t *testing.T, ctx context.Context, d *fakeDev, port uint16, peer [keyLen]byte, kick *Wakeup) *Runner {
	conf := &DeviceConf{Device: "wg-test", Public: d.pub, Listen: netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), port),
		Interval: 100, Peers: []PeerConf{{Pub: peer, Addr: netip.MustParseAddr("127.0.0.2")}}}
	// RetryMin and Watch an hour: only the first-exchange back-off and the kick can make it go on.
	r := &Runner{Conf: conf, Dev: d, States: NewStates("wg-test"), StateDir: t.TempDir(),
		RetryMin: time.Hour, FirstRetry: 20 * time.Millisecond, Watch: time.Hour, Kick: kick}
	done := make(chan struct{})
	go func() { defer close(done); r.Run(ctx) }()
	t.Cleanup(func() { <-done })
	return r
}

// The VNF step writes the daemon's file before it adds the peer to the device: the first exchange
// is not dialed until the device holds the peer (a SYN sent before would be dropped by WireGuard,
// and TCP sends it again only a second later), and the step's kick after the device changed makes
// it go at once (the watch, an hour here, is not what wakes it).
func TestTheFirstExchangeWaitsUntilTheDeviceHoldsThePeer(t *testing.T) {
	ExchangeTimeout = 5 * time.Second
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a, b := key(1), key(2) // a < b: a initiates
	d := holding(a)        // the peer not on the device yet
	var mu sync.Mutex
	var heldAtAccept []bool
	port, agreed := testResponder(t, ctx, b, a, 0, func() {
		mu.Lock()
		defer mu.Unlock()
		heldAtAccept = append(heldAtAccept, d.holds(b))
	})
	kick := &Wakeup{}
	initiator(t, ctx, d, port, b, kick)
	// Its watch and its initiator have both looked at the device (and found no peer).
	waitFor(t, 10*time.Second, "the runner did not look at its device", func() bool { return d.looked() >= 2 })
	d.hold(b)
	kick.Fire()
	waitFor(t, 10*time.Second, "no PSK after the device held the peer and the step kicked", func() bool {
		k, ok := d.get(b)
		r, rok := agreed()
		return ok && rok && k == r
	})
	mu.Lock()
	defer mu.Unlock()
	for i, held := range heldAtAccept {
		if !held {
			t.Fatalf("connection %d was dialed before the device held the peer", i)
		}
	}
}

// A first exchange that fails because the peer's daemon does not list this end yet (it closes
// the connection) is tried again within the short first back-off, not after RetryMin (an hour
// here); the state then says ok, with no failure left.
func TestAFailedFirstExchangeIsRetriedSoon(t *testing.T) {
	ExchangeTimeout = 5 * time.Second
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a, b := key(1), key(2)
	d := holding(a, PeerConf{Pub: b})
	port, agreed := testResponder(t, ctx, b, a, 2, func() {})
	r := initiator(t, ctx, d, port, b, nil)
	waitFor(t, 10*time.Second, "the first exchange was not retried soon after its failures", func() bool {
		k, ok := d.get(b)
		rk, rok := agreed()
		return ok && rok && k == rk
	})
	waitFor(t, 10*time.Second, "the state does not say ok", func() bool {
		s := snapshot(r, b)
		return s.State == "ok" && s.Failures == 0 && s.Renewals == 1
	})
}

// Every goroutine waiting on a Wakeup is woken by one Fire; a waiter that takes C afterwards
// waits for the next one; a nil Wakeup never fires and ignores Fire.
func TestWakeupWakesEveryWaiter(t *testing.T) {
	w := &Wakeup{}
	var wg sync.WaitGroup
	taken := make(chan struct{}, 3)
	for i := 0; i < 3; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := w.C()
			taken <- struct{}{}
			<-c
		}()
	}
	for i := 0; i < 3; i++ {
		<-taken
	}
	w.Fire()
	wg.Wait()
	select {
	case <-w.C():
		t.Fatal("a C taken after the Fire is already closed")
	default:
	}
	var none *Wakeup
	none.Fire()
	if none.C() != nil {
		t.Fatal("a nil Wakeup has a channel")
	}
}

// The initiators waiting for their peers share one read of the device per kick: a hub's first
// session leaves one waiting per new spoke, and the step's kick wakes them all at once. A read is
// reused only until the next kick (whose change it may not show) or the watch interval; with no
// kick every look reads.
func TestWaitingInitiatorsShareOneReadOfTheDevicePerKick(t *testing.T) {
	a := key(1)
	d := holding(a)
	kick := &Wakeup{}
	r := &Runner{Conf: &DeviceConf{Device: "wg-test", Public: a}, Dev: d, Watch: time.Hour, Kick: kick}
	look := func() {
		if _, err := r.devicePeers(kick.C()); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 8; i++ {
		look()
	}
	if n := d.looked(); n != 1 {
		t.Fatalf("8 waiters before a kick read the device %d times, want 1", n)
	}
	d.hold(key(2))
	kick.Fire()
	for i := 0; i < 8; i++ {
		look()
	}
	if n := d.looked(); n != 2 {
		t.Fatalf("8 waiters after one kick read the device %d times in all, want 2", n)
	}
	shakes, _ := r.devicePeers(kick.C())
	if _, on := shakes[key(2)]; !on {
		t.Fatal("the read after the kick does not show the peer the step added")
	}
	r.Watch = time.Nanosecond // every read older than the watch interval: read again
	look()
	look()
	if n := d.looked(); n != 4 {
		t.Fatalf("reads past the watch interval were reused: %d reads, want 4", n)
	}
	r.Watch, r.Kick = time.Hour, nil
	r.look = deviceLook{}
	for i := 0; i < 3; i++ {
		if _, err := r.devicePeers(r.Kick.C()); err != nil {
			t.Fatal(err)
		}
	}
	if n := d.looked(); n != 7 {
		t.Fatalf("with no kick each look must read: %d reads, want 7", n)
	}
}

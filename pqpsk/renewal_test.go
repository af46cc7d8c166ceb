package main

import (
	"context"
	"net/netip"
	"testing"
	"time"
)

// startPair starts an initiator (key 1) and a responder (key 2) on loopback with the given interval and
// StaleAfter; each device shows the tunnel's first handshake, from before the runners began, and
// no later one unless the test records it (a real responder's device shows at least the handshake
// the first exchange's packets made: install).
func startPair(t *testing.T, ctx context.Context, interval int, stale time.Duration) (da, db *fakeDev, ra, rb *Runner) {
	port := freePort(t)
	mk := func(own, peer [keyLen]byte, addr, paddr string) (*fakeDev, *Runner) {
		d := holding(own, PeerConf{Pub: peer})
		d.live = false
		d.shakes[peer] = time.Now().Unix() - 1
		conf := &DeviceConf{Device: "wg-test", Public: own, Listen: netip.AddrPortFrom(netip.MustParseAddr(addr), port),
			Interval: interval, Peers: []PeerConf{{Pub: peer, Addr: netip.MustParseAddr(paddr)}}}
		r := &Runner{Conf: conf, Dev: d, States: NewStates("wg-test"), StateDir: t.TempDir(),
			RetryMin: 100 * time.Millisecond, Watch: 100 * time.Millisecond, StaleAfter: stale}
		done := make(chan struct{})
		go func() { defer close(done); r.Run(ctx) }()
		t.Cleanup(func() { <-done })
		return d, r
	}
	da, ra = mk(key(1), key(2), "127.0.0.1", "127.0.0.2")
	db, rb = mk(key(2), key(1), "127.0.0.2", "127.0.0.1")
	return da, db, ra, rb
}

func snapshot(r *Runner, pub [keyLen]byte) PeerState {
	st := r.States.Lookup(pub)
	r.States.mu.Lock()
	defer r.States.mu.Unlock()
	return *st
}

// An idle tunnel (persistent-keepalive 0, no traffic: no handshakes) whose interval is far longer
// than a session lives: the initiator renews early (idleRenewal), so neither end ever gives up the
// key both hold (fallBackStale), and both keep the same one.
func TestAnIdleTunnelWithALongIntervalKeepsItsKey(t *testing.T) {
	ExchangeTimeout = 2 * time.Second
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()                                          // before the runners' cleanups, which wait for them to end
	da, db, ra, rb := startPair(t, ctx, 100, 3*time.Second) // early renewals every 2 s, fallback at 3 s
	waitFor(t, 3*time.Second, "no first exchange", func() bool { _, ok := da.get(key(2)); return ok })
	for end := time.Now().Add(5500 * time.Millisecond); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		for _, s := range []PeerState{snapshot(ra, key(2)), snapshot(rb, key(1))} {
			if s.Reason == "stale" {
				t.Fatalf("the %s gave up a key both ends hold on an idle tunnel", s.Role)
			}
		}
	}
	waitFor(t, 2*time.Second, "the ends do not hold the same key", func() bool {
		ka, oka := da.get(key(2))
		kb, okb := db.get(key(1))
		return oka && okb && ka == kb
	})
	if s := snapshot(ra, key(2)); s.Renewals < 3 || s.State != "ok" {
		t.Fatalf("no early renewals on the idle tunnel: %d renewals, state %s", s.Renewals, s.State)
	}
}

// A tunnel whose handshakes go on is not idle: no early renewal, the interval applies.
func TestATunnelWithHandshakesRenewsAtItsInterval(t *testing.T) {
	ExchangeTimeout = 2 * time.Second
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	da, db, ra, _ := startPair(t, ctx, 100, 3*time.Second) // an early renewal would come at 2 s
	waitFor(t, 3*time.Second, "no first exchange", func() bool { _, ok := da.get(key(2)); return ok })
	for end := time.Now().Add(3500 * time.Millisecond); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		da.handshake(key(2), time.Now().Unix())
		db.handshake(key(1), time.Now().Unix())
	}
	if s := snapshot(ra, key(2)); s.Renewals != 1 || s.State != "ok" {
		t.Fatalf("a tunnel with handshakes was renewed before its interval: %d renewals, state %s", s.Renewals, s.State)
	}
}

// hookDev runs onSet after each SetPSK (a watch round that lands right after an install).
type hookDev struct {
	*fakeDev
	onSet func(psk [keyLen]byte)
}

func (h *hookDev) SetPSK(p, k [keyLen]byte) error {
	err := h.fakeDev.SetPSK(p, k)
	h.onSet(k)
	return err
}

// The initiator's peer is busy during its exchange, as the responder's is: a watch round that
// reads the device between the install and Completed does not put the previous key back.
func TestAWatchRoundDuringTheInitiatorsExchangeKeepsTheNewKey(t *testing.T) {
	ExchangeTimeout = 2 * time.Second
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	port := freePort(t)
	a, b, old := key(1), key(2), key(7)
	db, _ := runner(t, ctx, b, "127.0.0.2", port, PeerConf{Pub: a, Addr: netip.MustParseAddr("127.0.0.1")})
	fd := &fakeDev{pub: a, psk: map[[keyLen]byte][keyLen]byte{b: old}, shakes: map[[keyLen]byte]int64{}}
	p := PeerConf{Pub: b, Addr: netip.MustParseAddr("127.0.0.2")}
	ra := &Runner{Conf: &DeviceConf{Device: "wg-test", Public: a, Listen: netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), port),
		Interval: 100, Peers: []PeerConf{p}}, States: NewStates("wg-test"), StateDir: t.TempDir()}
	st := ra.States.Peer(b, "initiator")
	ra.States.Completed(st, 5, old, a)
	rounds := 0
	ra.Dev = &hookDev{fd, func(k [keyLen]byte) {
		if k == old {
			return
		}
		held, _ := fd.PSKs()
		shakes, _ := fd.Handshakes()
		ra.restore(held, shakes) // the watch, between install and Completed
		rounds++
	}}
	waitFor(t, 3*time.Second, "no exchange (the responder does not listen)", func() bool {
		return ra.initiateOnce(ctx, a, p, st) == nil
	})
	ka, _ := fd.get(b)
	kb, okb := db.get(a)
	if rounds != 1 || !okb || ka != kb || ka == old {
		t.Fatalf("the previous key was put back during the exchange (rounds %d, same key %v)", rounds, ka == kb)
	}
}

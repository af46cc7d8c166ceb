package main

import (
	"context"
	"net/netip"
	"testing"
	"time"
)

// A key rotation that swaps the roles: the record (keyed by the peer's key) holds the epoch this
// end counted as initiator on its own clock, 10 min ahead of the peer's. The new initiator's
// epochs are accepted all the same, and the new pair of keys gets a PSK at once.
func TestARotationThatSwapsTheRolesAcceptsTheNewInitiatorsEpochs(t *testing.T) {
	ExchangeTimeout = 2 * time.Second
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	port := freePort(t)
	newOwn, b := key(3), key(2) // after the rotation b < newOwn: b initiates
	da := holding(newOwn, PeerConf{Pub: b})
	sa := NewStates("wg-test")
	sa.Bind(key(1)) // the key before the rotation, under which this end initiated
	sa.Peer(b, "initiator").Epoch = uint64(time.Now().Add(10 * time.Minute).UnixMilli())
	ra := &Runner{Conf: &DeviceConf{Device: "wg-test", Public: newOwn, Listen: netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), port),
		Interval: 100, Peers: []PeerConf{{Pub: b, Addr: netip.MustParseAddr("127.0.0.2")}}},
		Dev: da, States: sa, StateDir: t.TempDir(), RetryMin: 100 * time.Millisecond, Watch: 100 * time.Millisecond}
	done := make(chan struct{})
	go func() { defer close(done); ra.Run(ctx) }()
	defer func() { cancel(); <-done }()
	db, _ := runner(t, ctx, b, "127.0.0.2", port, PeerConf{Pub: newOwn, Addr: netip.MustParseAddr("127.0.0.1")})
	waitFor(t, 3*time.Second, "the new pair of keys gets no PSK", func() bool {
		ka, oka := da.get(b)
		kb, okb := db.get(newOwn)
		return oka && okb && ka == kb
	})
	if s := snapshot(ra, b); s.Refusals != 0 || s.Role != "responder" {
		t.Fatalf("the new initiator's epochs were refused %d times (role %s)", s.Refusals, s.Role)
	}
}

// The epochs are bound to the pair of public keys: a change of role or of the device's own key
// resets them; a restart under the same key keeps them (the status file names the key).
func TestEpochsAreBoundToThePairOfKeys(t *testing.T) {
	dir := t.TempDir()
	s := NewStates("wg-test")
	s.Bind(key(1))
	s.Peer(key(2), "initiator").Epoch = 42
	s.Peer(key(3), "initiator").Epoch = 43
	if err := s.Save(dir); err != nil {
		t.Fatal(err)
	}
	again := NewStates("wg-test")
	again.Load(dir)
	again.Bind(key(1))
	if e := again.Peer(key(2), "initiator").Epoch; e != 42 {
		t.Fatalf("a restart under the same key lost the epoch: %d", e)
	}
	if e := again.Peer(key(3), "responder").Epoch; e != 0 {
		t.Fatalf("a change of role kept the epoch: %d", e)
	}
	again.Bind(key(4))
	if e := again.Peer(key(2), "initiator").Epoch; e != 0 {
		t.Fatalf("a change of the own key kept the epoch: %d", e)
	}
	moved := NewStates("wg-test")
	moved.Load(dir)
	moved.Bind(key(5)) // the key changed while the daemon did not run
	if e := moved.Peer(key(2), "initiator").Epoch; e != 0 {
		t.Fatalf("a key changed across a restart kept the epoch: %d", e)
	}
}

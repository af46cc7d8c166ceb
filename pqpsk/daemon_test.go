package main

import (
	"context"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

type fakeDev struct {
	mu     sync.Mutex
	pub    [keyLen]byte
	psk    map[[keyLen]byte][keyLen]byte
	shakes map[[keyLen]byte]int64
	known  map[[keyLen]byte]bool // peers that had a key once and are still on the device
	looks  int                   // Read calls
	// live: a tunnel that carries traffic, so a held peer without a recorded handshake shows one
	// now (the exchange's own packets make it on a real device); else 0, none yet.
	live bool
}

// hold adds peer to the device (what the VNF step's `wg set` does).
func (f *fakeDev) hold(p [keyLen]byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.known == nil {
		f.known = map[[keyLen]byte]bool{}
	}
	f.known[p] = true
}

func (f *fakeDev) holds(p [keyLen]byte) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, psk := f.psk[p]
	return f.known[p] || psk
}

func (f *fakeDev) looked() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.looks
}

// holding is a device that holds peers (as the VNF step leaves it before the daemon dials).
func holding(pub [keyLen]byte, peers ...PeerConf) *fakeDev {
	d := &fakeDev{pub: pub, psk: map[[keyLen]byte][keyLen]byte{}, shakes: map[[keyLen]byte]int64{},
		known: map[[keyLen]byte]bool{}, live: true}
	for _, p := range peers {
		d.known[p.Pub] = true
	}
	return d
}

func (f *fakeDev) ClearPSK(p [keyLen]byte) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.psk, p)
	return nil
}

// Read is one look: counted (looked), as the real device's one call.
func (f *fakeDev) Read() (*Look, error) {
	shakes, _ := f.Handshakes()
	psks, _ := f.PSKs()
	f.mu.Lock()
	defer f.mu.Unlock()
	f.looks++
	return &Look{Own: f.pub, OwnKnown: true, PSKs: psks, Shakes: shakes}, nil
}

func (f *fakeDev) Handshakes() (map[[keyLen]byte]int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	m := map[[keyLen]byte]int64{}
	var now int64 // a peer the device holds: its handshake 0 unless recorded, or now when live
	if f.live {
		now = time.Now().Unix()
	}
	for k := range f.psk {
		m[k] = now
	}
	for k := range f.known {
		m[k] = now
	}
	for k, v := range f.shakes {
		m[k] = v
	}
	return m, nil
}

func (f *fakeDev) handshake(p [keyLen]byte, at int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.shakes[p] = at
}

// SetPSK is update-only, as the real write (WG.setPSK): for a peer the device does not hold it
// changes nothing and reports no error (wireguard-go's UAPI and the kernel alike).
func (f *fakeDev) SetPSK(p, k [keyLen]byte) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, has := f.psk[p]
	_, shook := f.shakes[p]
	if !has && !shook && !f.known[p] { // the peers Handshakes lists
		return nil
	}
	f.psk[p] = k
	return nil
}
func (f *fakeDev) PSKs() (map[[keyLen]byte][keyLen]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	m := map[[keyLen]byte][keyLen]byte{}
	for k, v := range f.psk {
		m[k] = v
	}
	return m, nil
}

func (f *fakeDev) get(p [keyLen]byte) ([keyLen]byte, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	k, ok := f.psk[p]
	return k, ok
}

func runner(t *testing.T, ctx context.Context, pub [keyLen]byte, addr string, port uint16, peers ...PeerConf) (*fakeDev, *Runner) {
	d := holding(pub, peers...)
	conf := &DeviceConf{Device: "wg-test", Public: pub, Listen: netip.AddrPortFrom(netip.MustParseAddr(addr), port),
		Interval: 1, Peers: peers}
	r := &Runner{Conf: conf, Dev: d, States: NewStates("wg-test"), StateDir: t.TempDir(),
		RetryMin: 100 * time.Millisecond, Watch: 100 * time.Millisecond}
	done := make(chan struct{})
	go func() { defer close(done); r.Run(ctx) }()
	t.Cleanup(func() { <-done })
	return d, r
}

func freePort(t *testing.T) uint16 {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return uint16(l.Addr().(*net.TCPAddr).Port)
}

// Two ends renew every second; a hostile third address floods the responder with garbage
// meanwhile: both ends still hold the same PSK, renewed, and the refusals are counted.
func TestRunnersAgreeAndRenewDespiteHostileNeighbour(t *testing.T) {
	ExchangeTimeout = 2 * time.Second
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	port := freePort(t)
	a, b := key(1), key(2) // a < b: a initiates
	da, ra := runner(t, ctx, a, "127.0.0.1", port, PeerConf{Pub: b, Addr: netip.MustParseAddr("127.0.0.2")})
	db, rb := runner(t, ctx, b, "127.0.0.2", port, PeerConf{Pub: a, Addr: netip.MustParseAddr("127.0.0.1")},
		PeerConf{Pub: key(0), Addr: netip.MustParseAddr("127.0.0.3")})
	stop := time.After(2500 * time.Millisecond)
	for flood := true; flood; {
		select {
		case <-stop:
			flood = false
		default:
			d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.3")}, Timeout: time.Second}
			if c, err := d.Dial("tcp", net.JoinHostPort("127.0.0.2", itoa(int(port)))); err == nil {
				c.Write([]byte("VPQ1 garbage"))
				c.Close()
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	ka, oka := da.get(b)
	kb, okb := db.get(a)
	if !oka || !okb || ka != kb {
		t.Fatalf("PSKs differ or missing: %v %v", oka, okb)
	}
	sa, sb := ra.States.Peer(b, "initiator"), rb.States.Peer(a, "responder")
	ra.States.mu.Lock()
	rb.States.mu.Lock()
	defer ra.States.mu.Unlock()
	defer rb.States.mu.Unlock()
	if sa.Renewals < 2 || sb.Renewals < 2 || sa.Epoch != sb.Epoch || sa.State != "ok" {
		t.Fatalf("renewals %d/%d epochs %d/%d state %s", sa.Renewals, sb.Renewals, sa.Epoch, sb.Epoch, sa.State)
	}
	if rb.States.peers[key(0)].Refusals == 0 {
		t.Fatal("the hostile neighbour's garbage was not refused")
	}
}

// A peer that never answers leaves the established state alone and is reported failing.
func TestWithheldAnswerReportedFailing(t *testing.T) {
	ExchangeTimeout = 300 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	port := freePort(t)
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.2", itoa(int(port))))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			defer c.Close() // read nothing, answer nothing
		}
	}()
	d, r := runner(t, ctx, key(1), "127.0.0.1", port, PeerConf{Pub: key(2), Addr: netip.MustParseAddr("127.0.0.2")})
	time.Sleep(1500 * time.Millisecond)
	if _, ok := d.get(key(2)); ok {
		t.Fatal("a PSK was installed without an answer")
	}
	if err := r.States.Save(r.StateDir); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(filepath.Join(r.StateDir, "wg-test.status"))
	if !strings.Contains(string(data), "state failing") || !strings.Contains(string(data), "reason timeout") {
		t.Fatalf("status: %s", data)
	}
	s2 := NewStates("wg-test")
	s2.Load(r.StateDir)
	if len(s2.peers) != 1 {
		t.Fatal("the status file does not load back")
	}
}

func TestConfigGrammar(t *testing.T) {
	pub := keyText(key(7))
	good := "# x\ndevice wg-s6a\npublic " + keyText(key(8)) + "\nlisten 10.0.0.1:51821\ninterval 120\npeer " + pub + " 10.0.0.2\n"
	c, err := ParseConfig([]byte(good))
	if err != nil || c.Interval != 120 || len(c.Peers) != 1 || c.Device != "wg-s6a" {
		t.Fatalf("%v %+v", err, c)
	}
	bad := []string{
		strings.Replace(good, "120", "9", 1), strings.Replace(good, "120", "86401", 1),
		strings.Replace(good, "10.0.0.2", "10.0.0.2%eth0", 1), strings.Replace(good, "wg-s6a", "a;b", 1),
		good + "peer " + pub + " 10.0.0.3\n", good + "extra line\n", "device x\n",
		strings.Replace(good, pub, pub[:42]+"d=", 1), strings.Replace(good, ":51821", ":0", 1),
		strings.Repeat("#", maxConfigBytes+1), strings.Replace(good, "public", "#", 1),
		good + "peer " + keyText(key(8)) + " 10.0.0.9\n",
	}
	for _, b := range bad {
		if _, err := ParseConfig([]byte(b)); err == nil {
			t.Errorf("accepted: %.60q", b)
		}
	}
}

// A device that lost its keys (re-created) gets the agreed one back, without an exchange.
func TestLostPSKIsPutBack(t *testing.T) {
	ExchangeTimeout = 2 * time.Second
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	port := freePort(t)
	a, b := key(1), key(2)
	da, _ := runner(t, ctx, a, "127.0.0.1", port, PeerConf{Pub: b, Addr: netip.MustParseAddr("127.0.0.2")})
	db, _ := runner(t, ctx, b, "127.0.0.2", port, PeerConf{Pub: a, Addr: netip.MustParseAddr("127.0.0.1")})
	deadline := time.Now().Add(3 * time.Second)
	for _, ok := db.get(a); !ok; _, ok = db.get(a) {
		if time.Now().After(deadline) {
			t.Fatal("no exchange")
		}
		time.Sleep(20 * time.Millisecond)
	}
	db.mu.Lock()
	delete(db.psk, a) // the device was re-created
	db.mu.Unlock()
	time.Sleep(400 * time.Millisecond)
	ka, _ := da.get(b)
	kb, ok := db.get(a)
	if !ok || ka != kb {
		t.Fatal("the agreed PSK was not put back")
	}
}

// One end rebooted: its device lost the PSK and this program's state, the other end kept the
// agreed key, so every handshake and every exchange between them fails. The end that holds the
// key gives it up once neither a handshake nor an exchange happened for StaleAfter, and not
// before; a peer whose handshakes go on keeps its key however long no exchange completes.
func TestAKeyNoHandshakeCanUseIsGivenUpAfterASessionLifetime(t *testing.T) {
	ExchangeTimeout = 200 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	port := freePort(t)
	a, gone, alive := key(1), key(2), key(3) // a initiates towards both; nobody listens there
	d := &fakeDev{pub: a, psk: map[[keyLen]byte][keyLen]byte{gone: key(7), alive: key(8)},
		shakes: map[[keyLen]byte]int64{}}
	conf := &DeviceConf{Device: "wg-test", Public: a, Listen: netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), port),
		Interval: 1, Peers: []PeerConf{{Pub: gone, Addr: netip.MustParseAddr("127.0.0.2")},
			{Pub: alive, Addr: netip.MustParseAddr("127.0.0.3")}}}
	r := &Runner{Conf: conf, Dev: d, States: NewStates("wg-test"), StateDir: t.TempDir(),
		RetryMin: 100 * time.Millisecond, Watch: 100 * time.Millisecond, StaleAfter: 1500 * time.Millisecond}
	r.States.Completed(r.States.Peer(gone, "initiator"), 5, key(7), a)
	r.States.Completed(r.States.Peer(alive, "initiator"), 5, key(8), a)
	done := make(chan struct{})
	go func() { defer close(done); r.Run(ctx) }()
	defer func() { cancel(); <-done }()
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		d.handshake(alive, time.Now().Unix()) // its sessions go on
		time.Sleep(100 * time.Millisecond)
	}
	if _, ok := d.get(gone); ok {
		t.Fatal("the key no handshake could use for longer than a session lives was kept")
	}
	if k, ok := d.get(alive); !ok || k != key(8) {
		t.Fatal("the key of a peer whose handshakes go on was given up")
	}
	st := r.States.Lookup(gone)
	r.States.mu.Lock()
	defer r.States.mu.Unlock()
	// "stale" at the fallback; the failed exchanges after it say why they fail.
	if st.State != "failing" || st.psk != nil {
		t.Fatalf("state %s reason %s", st.State, st.Reason)
	}
}

// The watch reads the device's file only to guard a write: a look at a device whose peers all
// hold their agreed keys and are not stale reads it not at all (a hub's watch read its whole file
// once per spoke every 5 s). A stale key is still given up only while the file lists its peer.
func TestTheWatchReadsTheFileOnlyBeforeAWrite(t *testing.T) {
	var reads atomic.Int64
	readConfig = func(path string) ([]byte, error) { reads.Add(1); return readBounded(path) }
	defer func() { readConfig = readBounded }()
	a := key(1)
	peers := []PeerConf{{Pub: key(2), Addr: netip.MustParseAddr("10.0.0.2")}, {Pub: key(3), Addr: netip.MustParseAddr("10.0.0.3")}}
	d := holding(a, peers...)
	path := filepath.Join(t.TempDir(), "wg-test.conf")
	text := "device wg-test\npublic " + keyText(a) + "\nlisten 10.0.0.1:51899\ninterval 120\n"
	for _, p := range peers {
		text += "peer " + keyText(p.Pub) + " " + p.Addr.String() + "\n"
	}
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	r := &Runner{Conf: &DeviceConf{Device: "wg-test", Public: a, Peers: peers}, Dev: d, States: NewStates("wg-test"),
		ConfigPath: path, StaleAfter: time.Hour}
	r.started = time.Now()
	for i, p := range peers {
		psk := key(byte(7 + i))
		r.States.Completed(r.States.Peer(p.Pub, "responder"), 5, psk, a)
		d.psk[p.Pub] = psk
		d.shakes[p.Pub] = time.Now().Unix()
	}
	r.States.Keep(map[[keyLen]byte]bool{peers[0].Pub: true, peers[1].Pub: true})
	for range 3 {
		look, err := d.Read()
		if err != nil {
			t.Fatal(err)
		}
		r.restore(look.PSKs, look.Shakes)
		r.fallBackStale(look.PSKs, look.Shakes)
	}
	if n := reads.Load(); n != 0 {
		t.Fatalf("the file was read %d times in 3 looks with nothing to write", n)
	}
	r.StaleAfter = time.Nanosecond // now every key is stale: each is given up, the file read for each
	r.started = time.Now().Add(-time.Hour)
	d.shakes[peers[0].Pub], d.shakes[peers[1].Pub] = 0, 0
	look, err := d.Read()
	if err != nil {
		t.Fatal(err)
	}
	r.fallBackStale(look.PSKs, look.Shakes)
	if _, ok := d.get(peers[0].Pub); ok || reads.Load() != 2 {
		t.Fatalf("a stale key kept, or the file read %d times for 2 stale keys", reads.Load())
	}
}

// The fallback waits for StaleAfter: a key silent for less is kept.
func TestAKeySilentForLessThanASessionLifetimeIsKept(t *testing.T) {
	ExchangeTimeout = 200 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	port := freePort(t)
	a, b := key(1), key(2)
	d := &fakeDev{pub: a, psk: map[[keyLen]byte][keyLen]byte{b: key(7)}, shakes: map[[keyLen]byte]int64{}}
	conf := &DeviceConf{Device: "wg-test", Public: a, Listen: netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), port),
		Interval: 1, Peers: []PeerConf{{Pub: b, Addr: netip.MustParseAddr("127.0.0.2")}}}
	r := &Runner{Conf: conf, Dev: d, States: NewStates("wg-test"), StateDir: t.TempDir(),
		RetryMin: 100 * time.Millisecond, Watch: 100 * time.Millisecond, StaleAfter: time.Hour}
	r.States.Completed(r.States.Peer(b, "initiator"), 5, key(7), a)
	done := make(chan struct{})
	go func() { defer close(done); r.Run(ctx) }()
	time.Sleep(800 * time.Millisecond)
	cancel()
	<-done
	if k, ok := d.get(b); !ok || k != key(7) {
		t.Fatal("a key silent for less than StaleAfter was given up")
	}
}

// waitFor polls cond for at most d.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal(what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A key rotation: the device's own key changed (the VNF step cleared the peers' keys with it, or
// did not). A key agreed under the previous own key is never put back and is cleared from the
// device, so both ends start the new pair of keys classical; nothing is put back while the
// device's key differs from the one the file names (the file follows the step).
func TestAKeyAgreedUnderThePreviousOwnKeyIsClearedNeverPutBack(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a, b, next := key(1), key(2), key(5)
	d := &fakeDev{pub: next, psk: map[[keyLen]byte][keyLen]byte{b: key(7)}, shakes: map[[keyLen]byte]int64{}}
	conf := &DeviceConf{Device: "wg-test", Public: a, Listen: netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), freePort(t)),
		Interval: 100, Peers: []PeerConf{{Pub: b, Addr: netip.MustParseAddr("127.0.0.2")}}}
	states := NewStates("wg-test")
	states.Completed(states.Peer(b, "initiator"), 5, key(7), a)
	r := &Runner{Conf: conf, Dev: d, States: states, RetryMin: time.Hour, Watch: 50 * time.Millisecond}
	done := make(chan struct{})
	go func() { defer close(done); r.Run(ctx) }()
	d.mu.Lock()
	delete(d.psk, b) // the step cleared it with the key change
	d.mu.Unlock()
	time.Sleep(300 * time.Millisecond)
	if _, ok := d.get(b); ok {
		t.Fatal("a key was put back while the device's key is not the file's")
	}
	cancel()
	<-done
	// The file now names the new key: the old pair's key is void, and cleared where still held.
	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	d.SetPSK(b, key(7))
	conf2 := *conf
	conf2.Public = next
	r2 := &Runner{Conf: &conf2, Dev: d, States: states, RetryMin: time.Hour, Watch: 50 * time.Millisecond}
	done = make(chan struct{})
	go func() { defer close(done); r2.Run(ctx) }()
	waitFor(t, 2*time.Second, "the previous pair's key was kept on the device", func() bool { _, ok := d.get(b); return !ok })
	time.Sleep(200 * time.Millisecond)
	if _, ok := d.get(b); ok {
		t.Fatal("the previous pair's key came back")
	}
	if _, ok := states.Agreed(b, next); ok {
		t.Fatal("a key agreed under the previous own key counts for the new one")
	}
	cancel()
	<-done
}

// A peer the step removed (its relation data refused) and added again, with the same keys on
// both ends: the other end still holds the agreed key, so this end puts it back on the new entry.
func TestAPeerRemovedAndAddedAgainGetsTheAgreedKeyBack(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a, b := key(1), key(2)
	d := &fakeDev{pub: a, psk: map[[keyLen]byte][keyLen]byte{b: key(7)}, shakes: map[[keyLen]byte]int64{}}
	listen := netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), freePort(t))
	with := &DeviceConf{Device: "wg-test", Public: a, Listen: listen, Interval: 100,
		Peers: []PeerConf{{Pub: b, Addr: netip.MustParseAddr("127.0.0.2")}}}
	without := &DeviceConf{Device: "wg-test", Public: a, Listen: listen, Interval: 100}
	states := NewStates("wg-test")
	states.Completed(states.Peer(b, "initiator"), 5, key(7), a)
	run := func(c *DeviceConf) func() {
		ctx, cancel := context.WithCancel(ctx)
		r := &Runner{Conf: c, Dev: d, States: states, RetryMin: time.Hour, Watch: 50 * time.Millisecond}
		done := make(chan struct{})
		go func() { defer close(done); r.Run(ctx) }()
		return func() { cancel(); <-done }
	}
	stop := run(without)
	d.mu.Lock()
	delete(d.psk, b) // removed from the device
	delete(d.known, b)
	d.mu.Unlock()
	time.Sleep(200 * time.Millisecond)
	if _, ok := d.get(b); ok {
		t.Fatal("a key was set for a peer the device does not hold (wg set would add it)")
	}
	stop()
	d.mu.Lock()
	d.shakes[b] = 0 // added again, classical
	d.mu.Unlock()
	stop = run(with)
	defer stop()
	waitFor(t, 2*time.Second, "the agreed key was not put back on the peer added again", func() bool {
		k, ok := d.get(b)
		return ok && k == key(7)
	})
}

// The file changed for another peer (a spoke joined a hub): a peer that holds a key agreed under
// this own key is not renewed at once; its renewal stays an interval after the last one.
func TestAReloadDoesNotRenewAPeerThatHoldsAKey(t *testing.T) {
	ExchangeTimeout = 2 * time.Second
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	port := freePort(t)
	a, b := key(1), key(2)
	first, stopFirst := context.WithCancel(ctx)
	da, ra := runner(t, first, a, "127.0.0.1", port, PeerConf{Pub: b, Addr: netip.MustParseAddr("127.0.0.2")})
	_, _ = runner(t, ctx, b, "127.0.0.2", port, PeerConf{Pub: a, Addr: netip.MustParseAddr("127.0.0.1")})
	st := ra.States.Peer(b, "initiator")
	waitFor(t, 3*time.Second, "no exchange", func() bool { _, ok := da.get(b); return ok })
	stopFirst()
	time.Sleep(100 * time.Millisecond)
	ra.States.mu.Lock()
	before := st.Renewals
	ra.States.mu.Unlock()
	// What a reload starts: a new runner over the same states, its interval 100 s.
	conf := *ra.Conf
	conf.Interval = 100
	r2 := &Runner{Conf: &conf, Dev: da, States: ra.States, RetryMin: time.Hour, Watch: 50 * time.Millisecond}
	ctx2, cancel2 := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); r2.Run(ctx2) }()
	time.Sleep(1500 * time.Millisecond)
	cancel2()
	<-done
	ra.States.mu.Lock()
	after := st.Renewals
	ra.States.mu.Unlock()
	if after != before {
		t.Fatalf("a reload renewed a peer that holds a key: %d -> %d", before, after)
	}
}

// The daemon restarted (no key in memory) while the device kept its keys: it adopts them, so
// that a wireguard restart afterwards still gets them back.
func TestARestartedDaemonAdoptsTheDevicesKeys(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a, b := key(1), key(2)
	d := &fakeDev{pub: a, psk: map[[keyLen]byte][keyLen]byte{b: key(7)}, shakes: map[[keyLen]byte]int64{b: time.Now().Unix()}}
	conf := &DeviceConf{Device: "wg-test", Public: a, Listen: netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), freePort(t)),
		Interval: 100, Peers: []PeerConf{{Pub: b, Addr: netip.MustParseAddr("127.0.0.2")}}}
	r := &Runner{Conf: conf, Dev: d, States: NewStates("wg-test"), RetryMin: time.Hour, Watch: 50 * time.Millisecond}
	done := make(chan struct{})
	go func() { defer close(done); r.Run(ctx) }()
	defer func() { cancel(); <-done }()
	waitFor(t, 2*time.Second, "the device's key was not adopted", func() bool { _, ok := r.States.Agreed(b, a); return ok })
	d.mu.Lock()
	delete(d.psk, b) // wireguard restarted
	d.mu.Unlock()
	waitFor(t, 2*time.Second, "the adopted key was not put back", func() bool { k, ok := d.get(b); return ok && k == key(7) })
}

// pq-psk turned off for a peer that stays on the device: the step reset its key, so the agreed
// one is forgotten and not put back when the peer is listed again (the other end reset it too).
func TestAPeerThatLeftPQButStayedOnTheDeviceIsNotGivenItsKeyBack(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a, b := key(1), key(2)
	d := &fakeDev{pub: a, psk: map[[keyLen]byte][keyLen]byte{}, shakes: map[[keyLen]byte]int64{b: time.Now().Unix()}}
	listen := netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), freePort(t))
	without := &DeviceConf{Device: "wg-test", Public: a, Listen: listen, Interval: 100}
	states := NewStates("wg-test")
	states.Completed(states.Peer(b, "initiator"), 5, key(7), a)
	r := &Runner{Conf: without, Dev: d, States: states, RetryMin: time.Hour, Watch: 50 * time.Millisecond}
	done := make(chan struct{})
	go func() { defer close(done); r.Run(ctx) }()
	waitFor(t, 2*time.Second, "the reset peer's key is still remembered", func() bool {
		return states.Lookup(b) == nil || func() bool {
			states.mu.Lock()
			defer states.mu.Unlock()
			return states.peers[b] == nil || states.peers[b].psk == nil
		}()
	})
	cancel()
	<-done
	if _, ok := d.get(b); ok {
		t.Fatal("a key was put back on a peer that left pq-psk")
	}
}

// The watch reads its device once per look (the own key, the keys held and the handshakes in one
// Read), at its start and at each kick; with the interval an hour away, nothing else reads.
func TestTheWatchReadsTheDeviceOncePerLook(t *testing.T) {
	a, b := key(1), key(2)
	d := holding(a, PeerConf{Pub: b})
	kick := &Wakeup{}
	r := &Runner{Conf: &DeviceConf{Device: "wg-test", Public: a, Peers: []PeerConf{{Pub: b}}}, Dev: d,
		States: NewStates("wg-test"), Watch: time.Hour, Kick: kick}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); r.keepInstalled(ctx) }()
	waitFor(t, 10*time.Second, "no first look", func() bool { return d.looked() >= 1 })
	for i := 2; i <= 4; i++ {
		kick.Fire()
		waitFor(t, 10*time.Second, "no look after the kick", func() bool { return d.looked() >= i })
		if n := d.looked(); n != i {
			t.Fatalf("%d reads after %d looks", n, i)
		}
	}
	cancel()
	<-done
	if n := d.looked(); n != 4 {
		t.Fatalf("%d reads for 4 looks", n)
	}
}

// The VNF step writes the responder's file before it adds the peer to its device, and a key
// rotation's follower answers over its temporary device meanwhile: an exchange must not complete
// then, or the initiator installs a key the responder's device does not hold, and the first
// handshake of the new key pair fails (5 s of the tunnel's packets: REKEY_TIMEOUT). The write is
// update-only (fakeDev.SetPSK as WG.setPSK): for a peer the device does not hold it changes
// nothing and reports no error, so the install reads the device back.
func TestNoKeyIsAgreedWhileTheRespondersDeviceLacksThePeer(t *testing.T) {
	ctx, cancel, port, a, b, da := initiatorOf(t)
	defer cancel()
	db := holding(b) // its file lists a, its device does not hold a yet
	stop := refusedAtInstall(t, ctx, cancel, port, b, a, db, NewStates("wg-test"), "for a peer its device does not hold")
	defer stop()
	if _, ok := da.get(b); ok {
		t.Fatal("the initiator installed a PSK the responder's device does not hold")
	}
	db.hold(a) // the step adds the peer
	waitFor(t, 10*time.Second, "no PSK agreed once both devices hold their peers", func() bool {
		ka, oka := da.get(b)
		kb, okb := db.get(a)
		return oka && okb && ka == kb
	})
}

// A key rotation's exchange can run over the temporary devices while the main devices' new pair
// of keys has had no handshake yet, or has one in flight: a PSK installed at one end then fails
// that first handshake, and the pair, with no session yet, loses REKEY_TIMEOUT (5 s) of packets.
// So the responder installs only once its device shows a handshake with the peer under its
// current own key (the time a device shows is kept across a new private key: the previous pair's
// is older than the change) or, for a peer entry just added, any handshake at all.
func TestTheResponderInstallsOnlyOnceTheNewPairHasASession(t *testing.T) {
	for _, tc := range []struct {
		name    string
		rotated bool // the responder's own key changed after the last handshake it shows
	}{{"own key changed", true}, {"peer just added", false}} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel, port, a, b, da := initiatorOf(t)
			defer cancel()
			db := holding(b, PeerConf{Pub: a})
			db.live = false
			states := NewStates("wg-test")
			if tc.rotated {
				states.Bind(key(9)) // the previous own key, then the current one
				states.Bind(b)
				db.handshake(a, states.KeyAt()-5) // the previous pair's
			}
			stop := refusedAtInstall(t, ctx, cancel, port, b, a, db, states, "before the pair's first handshake")
			defer stop()
			if _, ok := db.get(a); ok {
				t.Fatal("the responder installed a PSK before the pair's first handshake")
			}
			if _, ok := da.get(b); ok {
				t.Fatal("the initiator installed a PSK before the pair's first handshake")
			}
			db.handshake(a, time.Now().Unix()) // the new pair's first handshake
			waitFor(t, 10*time.Second, "no PSK agreed once the pair has a session", func() bool {
				ka, oka := da.get(b)
				kb, okb := db.get(a)
				return oka && okb && ka == kb
			})
		})
	}
}

// refusedAtInstall runs the responder b (device db, states) for the initiator a, waits until it
// has refused a's exchange at install, and fails the test if it completed one instead (when:
// what the test holds the device to). The returned stop ends the responder.
func refusedAtInstall(t *testing.T, ctx context.Context, cancel context.CancelFunc, port uint16, b, a [keyLen]byte,
	db *fakeDev, states *States, when string) (stop func()) {
	t.Helper()
	conf := &DeviceConf{Device: "wg-test", Public: b, Listen: netip.AddrPortFrom(netip.MustParseAddr("127.0.0.2"), port),
		Interval: 1, Peers: []PeerConf{{Pub: a, Addr: netip.MustParseAddr("127.0.0.1")}}}
	rb := &Runner{Conf: conf, Dev: db, States: states, StateDir: t.TempDir(),
		RetryMin: 100 * time.Millisecond, Watch: 100 * time.Millisecond}
	done := make(chan struct{})
	go func() { defer close(done); rb.Run(ctx) }()
	stop = func() { cancel(); <-done }
	st := rb.States.Peer(a, "responder")
	answered := func() (uint64, string) {
		rb.States.mu.Lock()
		defer rb.States.mu.Unlock()
		return st.Renewals, st.Reason
	}
	waitFor(t, 10*time.Second, "the responder answered no exchange", func() bool {
		n, reason := answered()
		return n > 0 || reason == "install"
	})
	if n, _ := answered(); n > 0 {
		stop()
		t.Fatal("the responder completed an exchange " + when)
	}
	return stop
}

// initiatorOf starts the initiator a of the install-guard tests, for the responder b at
// 127.0.0.2 on a free port (its device: da); the responder is the test's own.
func initiatorOf(t *testing.T) (ctx context.Context, cancel context.CancelFunc, port uint16, a, b [keyLen]byte,
	da *fakeDev) {
	t.Helper()
	ExchangeTimeout = 2 * time.Second
	ctx, cancel = context.WithCancel(context.Background())
	port = freePort(t)
	a, b = key(1), key(2)
	da, _ = runner(t, ctx, a, "127.0.0.1", port, PeerConf{Pub: b, Addr: netip.MustParseAddr("127.0.0.2")})
	return ctx, cancel, port, a, b, da
}

// One device's runner: a listener on the device's inner address answering the peers this end
// responds to, and one renewal loop per peer this end initiates. Each peer is independent: an
// exchange that fails or is refused changes nothing but that peer's counters.
package main

import (
	"context"
	"crypto/subtle"
	"errors"
	"log"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

const maxConns = 16 // connections answered at once per device

// Runner runs one device's configuration until its context ends.
type Runner struct {
	Conf     *DeviceConf
	Dev      Device
	States   *States
	StateDir string
	// RetryMin is the first retry delay after a failed renewal (doubling up to the interval).
	RetryMin time.Duration
	// FirstRetry is the first retry delay after a failed exchange while none with the peer has
	// completed under this own key (doubling, past RetryMin, up to the interval; 0: RetryMin).
	// Such a failure is mostly the peer's step being a moment behind this one (its daemon does
	// not list this end yet: it closes the connection), so the next try should not wait long.
	FirstRetry time.Duration
	// Watch is how often the device's preshared keys are compared with the agreed ones (0: 5 s).
	Watch time.Duration
	// ConfigPath is the device's file: a key is put back only for a peer it still lists (the VNF
	// step rewrites it before it resets a peer's key, so the two never fight). "": no check.
	ConfigPath string
	// StaleAfter is how long a peer may go without a handshake and without a completed exchange
	// before the key its device holds is given up (0: RejectAfterTime; fallBackStale).
	StaleAfter time.Duration
	// Kick fires when the VNF step has just written a device or a file (the kick file): the
	// watch looks at once, an initiator waiting for its peer on the device looks again, and so
	// does a listener waiting for its address. nil: only the timers.
	Kick *Wakeup
	// look: the device's peers as the waiting initiators last read them (devicePeers).
	look    deviceLook
	started time.Time
	// dirty: counters changed that only saveSoon saved (refusals); flushLoop writes them.
	dirty   atomic.Bool
	dirtyCh chan struct{}
}

// RejectAfterTime is WireGuard's: a session's keys are used at most this long after the
// handshake that made them (wireguard-go device/constants.go; the kernel's messages.h the same).
const RejectAfterTime = 180 * time.Second

// retryCap bounds the wait between failed exchanges, whatever the interval: after a fallback to
// a classical tunnel the next exchange should not wait a whole interval.
const retryCap = 30 * time.Second

// readConfig reads a device's file for stillListed (tests count the reads).
var readConfig = readBounded

// stillListed tells whether the device's file on disk still lists pub. It reads and parses the
// whole file: asked only before a write it guards, never of every peer at every look.
func (r *Runner) stillListed(pub [keyLen]byte) bool {
	if r.ConfigPath == "" {
		return true
	}
	data, err := readConfig(r.ConfigPath)
	if err != nil {
		return false
	}
	conf, err := ParseConfig(data)
	if err != nil {
		return false
	}
	for _, p := range conf.Peers {
		if p.Pub == pub {
			return true
		}
	}
	return false
}

func (r *Runner) watchEvery() time.Duration {
	if r.Watch > 0 {
		return r.Watch
	}
	return 5 * time.Second
}

func (r *Runner) save() {
	r.dirty.Store(false) // this write has them
	if r.StateDir != "" {
		if err := r.States.Save(r.StateDir); err != nil {
			log.Printf("%s: status not saved: %v", r.Conf.Device, err)
		}
	}
}

// saveSoon records that refusal counters changed: they are written within a second (flushLoop),
// with the next save, or at shutdown. A connection flood (the listener is reachable from the
// underlay, listen.go) costs at most one status file write a second per device, not one each.
func (r *Runner) saveSoon() {
	r.dirty.Store(true)
	select {
	case r.dirtyCh <- struct{}{}:
	default:
	}
}

// flushLoop writes the counters saveSoon left, at most once a second, and the last ones before
// the runner ends (its caller may remove the status file right after).
func (r *Runner) flushLoop(ctx context.Context) {
	flush := func() {
		if r.dirty.Load() {
			r.save()
		}
	}
	defer flush()
	for {
		select {
		case <-ctx.Done():
			return
		case <-r.dirtyCh:
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
		flush()
	}
}

// Run starts the listener and the initiator loops, and waits for ctx.
func (r *Runner) Run(ctx context.Context) {
	r.started = time.Now()
	r.dirtyCh = make(chan struct{}, 1)
	own := r.Conf.Public
	keep := map[[keyLen]byte]bool{}
	initiators := map[[keyLen]byte]*PeerState{}
	r.States.Bind(own)
	for _, p := range r.Conf.Peers {
		keep[p.Pub] = true
		if lessKey(own, p.Pub) {
			initiators[p.Pub] = r.States.Peer(p.Pub, "initiator")
		} else {
			r.States.Peer(p.Pub, "responder")
		}
	}
	r.States.Keep(keep)
	r.adopt() // before the loops: a key adopted is renewed on its schedule, not at once
	r.save()
	var wg sync.WaitGroup
	for _, p := range r.Conf.Peers {
		if st := initiators[p.Pub]; st != nil {
			wg.Add(1)
			go func(p PeerConf) { defer wg.Done(); r.initiateLoop(ctx, own, p, st) }(p)
		}
	}
	wg.Add(3)
	go func() { defer wg.Done(); r.flushLoop(ctx) }()
	go func() { defer wg.Done(); r.listen(ctx, own) }()
	go func() { defer wg.Done(); r.keepInstalled(ctx) }()
	wg.Wait()
}

// keepInstalled puts the agreed key back when the device lost it: a device re-created by
// wg-quick or set whole (wg setconf) starts without preshared keys, while the other end still
// holds the agreed one; their handshakes would fail, and with them the tunnel this protocol runs
// over. Only keys agreed by both ends are put back, so nothing is switched one-sidedly.
//
// A key is bound to the pair of public keys it was agreed under. While the device's own key is
// not the one its file names (the VNF step has just changed it: a key rotation; the file
// follows), nothing is put back; a key agreed under an earlier own key is void, and cleared from
// the device should it still hold it (the step clears them with the key change already), so
// that both ends start the new pair classical.
func (r *Runner) keepInstalled(ctx context.Context) {
	kicked := r.Kick.C() // taken before each look: a kick during it makes the next one at once
	for first := true; ; first = false {
		if !first {
			select {
			case <-ctx.Done():
				return
			case <-time.After(r.watchEvery()):
			case <-kicked:
			}
			kicked = r.Kick.C()
		}
		look, err := r.Dev.Read() // one read: the own key, the keys held and the handshakes
		if err != nil {
			continue
		}
		if look.OwnKnown && look.Own != r.Conf.Public {
			look.Scrub()
			continue
		}
		r.restore(look.PSKs, look.Shakes)
		r.fallBackStale(look.PSKs, look.Shakes)
		look.Scrub()
		r.States.Expire(r.stale())
	}
}

// restore puts each listed peer's agreed key back where the device lost it, and clears the keys
// agreed under an earlier own key. Only for peers the device holds (its write is update-only too).
// Called with every peer the device holds (shakes) and their keys (held).
func (r *Runner) restore(held map[[keyLen]byte][keyLen]byte, shakes map[[keyLen]byte]int64) {
	type want struct {
		st           *PeerState
		psk          [keyLen]byte
		void, listed bool
	}
	var todo []want
	r.States.mu.Lock()
	for pub, p := range r.States.peers {
		if _, on := shakes[pub]; !on || p.psk == nil || p.busy {
			continue
		}
		todo = append(todo, want{p, *p.psk, p.pskOwn != r.Conf.Public, p.listed})
	}
	r.States.mu.Unlock()
	for _, w := range todo {
		pub := w.st.Pub
		got, has := held[pub]
		switch {
		case !w.listed:
			// On the device but no longer this program's (pq-psk off for it): the step reset its
			// key; the agreed one is forgotten, never put back should the peer be listed again
			// (the other end reset it too). A peer removed from the device keeps it (Keep).
			if !has || got != w.psk {
				r.States.Void(w.st)
			}
			continue
		case w.void:
			if has && got == w.psk && r.Dev.ClearPSK(pub) == nil {
				log.Printf("%s: cleared the PSK of %s agreed under this device's previous key", r.Conf.Device, keyText(pub))
			}
			r.States.Void(w.st)
		case !has || got != w.psk:
			if r.stillListed(pub) && r.Dev.SetPSK(pub, w.psk) == nil {
				log.Printf("%s: put the agreed PSK back for %s (the device had lost it)", r.Conf.Device, keyText(pub))
			}
		}
		if at := shakes[pub]; at > 0 {
			r.States.Used(w.st, at)
		}
	}
}

// adopt takes the keys the device holds for listed peers this program knows no key of (it was
// restarted): so a wireguard restart later gets them back (States.Adopt).
func (r *Runner) adopt() {
	look, err := r.Dev.Read()
	if err != nil {
		return
	}
	defer look.Scrub()
	if look.OwnKnown && look.Own != r.Conf.Public {
		return
	}
	for pub, psk := range look.PSKs {
		r.States.Adopt(pub, r.Conf.Public, psk)
	}
}

// errNotHeld: the device does not hold the key just written for the peer.
var errNotHeld = errors.New("the device does not hold the peer, or not the agreed PSK after the write")

// errNoSession: the device shows no handshake with the peer under the current pair of keys.
var errNoSession = errors.New("no handshake with the peer under the current keys yet")

// install sets the key an exchange agreed, unless the device's own key is no longer the one it
// was agreed under (the step changed it meanwhile), and succeeds only when the device holds the
// key afterwards (read back). The write is update-only (WG.setPSK): for a peer the device does
// not hold it changes nothing and reports no error (wireguard-go's UAPI turns the peer into a
// dummy, the kernel skips it). The VNF step writes this program's file before it adds a peer to
// the device (tunnels/pqpsk.sh), and a key rotation's follower runs an exchange over the
// temporary devices: a responder could complete an exchange for a peer its device did not hold
// yet, acknowledge it, and let the initiator install a key the other device then lacked, so the
// first handshake of the new key pair failed and the tunnel lost REKEY_TIMEOUT (5 s) of packets.
// An install that did not land fails the exchange instead: the responder sends no
// acknowledgement, the initiator installs nothing, and tries again (its retry back-off) once the
// peer is on both devices.
//
// The responder (session true) installs first, and only once its device shows a handshake with
// the peer under the current pair of keys, so that the pair has a session at both ends (a
// responder's device records a handshake once the initiator's first data arrived under it): a
// PSK switched while that pair's first handshake is in flight (a key rotation's exchange runs
// over the temporary devices while the main ones handshake) would fail that handshake, and the
// pair, with no session yet, would lose REKEY_TIMEOUT of packets. Once a session exists, a
// handshake that fails in the moment between the two installs is a rekey that WireGuard retries
// while the session still carries the traffic. Without such a handshake the exchange fails; the
// initiator tries again (its retry back-off), and its own traffic makes the handshake.
func (r *Runner) install(peer, psk [keyLen]byte, session bool) error {
	look, err := r.Dev.Read()
	if err != nil {
		return err
	}
	look.Scrub()
	if look.OwnKnown && look.Own != r.Conf.Public {
		return errors.New("the device's own key changed")
	}
	at, on := look.Shakes[peer]
	if !on {
		return errNotHeld
	}
	if session && (at <= 0 || at < r.States.KeyAt()) {
		return errNoSession
	}
	if err := r.Dev.SetPSK(peer, psk); err != nil {
		return err
	}
	after, err := r.Dev.Read()
	if err != nil {
		return err
	}
	defer after.Scrub()
	held, has := after.PSKs[peer]
	if !has || subtle.ConstantTimeCompare(held[:], psk[:]) != 1 {
		clear(held[:])
		return errNotHeld
	}
	clear(held[:])
	return nil
}

func (r *Runner) stale() time.Duration {
	if r.StaleAfter > 0 {
		return r.StaleAfter
	}
	return RejectAfterTime
}

// fallBackStale gives up the preshared key a device holds for a peer when it can no longer be the
// one both ends hold: no handshake and no completed exchange with that peer for longer than a
// session may live (RejectAfterTime). On an idle tunnel the initiator renews before that
// (idleRenewal), so a key both ends hold and can still renew is never given up. That is one end rebooted (its device and this program's state are gone, its
// key file kept) while the other kept the agreed key: every handshake between them fails, and
// the exchange that would agree a new key runs over the tunnel, so without this the tunnel stayed
// down for good. Both ends see the same silence and fall back alike (a genuine outage of the
// underlay too); the next exchange then runs over the classical tunnel and installs a new key.
// Cost: an attacker who can stop every packet of the tunnel for RejectAfterTime gets a classical
// handshake until that exchange completes (seconds; docs/security.md).
func (r *Runner) fallBackStale(held map[[keyLen]byte][keyLen]byte, shakes map[[keyLen]byte]int64) {
	stale := r.stale()
	for pub := range held {
		st := r.States.Lookup(pub)
		if st == nil || !st.listed {
			continue
		}
		last := r.started
		if at := time.Unix(shakes[pub], 0); shakes[pub] > 0 && at.After(last) {
			last = at
		}
		r.States.mu.Lock()
		if at := time.Unix(st.Last, 0); st.Last > 0 && at.After(last) {
			last = at
		}
		if st.lastAt.After(last) {
			last = st.lastAt
		}
		busy := st.busy
		r.States.mu.Unlock()
		// The file is asked last, only of a key about to be given up: asked first, it was read
		// and parsed once per held key at every look, a hub's whole file once per spoke every 5 s.
		if busy || time.Since(last) <= stale || !r.stillListed(pub) {
			continue
		}
		if err := r.Dev.ClearPSK(pub); err == nil {
			r.States.FellBack(st)
			log.Printf("%s: no handshake and no exchange with %s for %s: its PSK is given up (classical until the next exchange)",
				r.Conf.Device, keyText(pub), stale)
			r.save()
		}
	}
}

func lessKey(a, b [keyLen]byte) bool {
	for i := range a {
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return false
}

// nextEpoch is newer than the last one and than any this end could have used before a restart.
func nextEpoch(last uint64) uint64 {
	e := uint64(time.Now().UnixMilli())
	if e <= last {
		e = last + 1
	}
	return e
}

// idleRenewal is how long a tunnel may stay silent (no handshake, no completed exchange) before
// the initiator renews its key early, whatever its interval: WireGuard's RekeyAfterTime (120 s) of
// the RejectAfterTime (180 s) after which both ends give a silent key up (fallBackStale; both in
// wireguard-go's device/constants.go). An idle tunnel (persistent-keepalive 0, no traffic) has no
// handshakes; with an interval above 180 s its key, valid and held by both ends, would otherwise be
// given up 180 s after every exchange. The exchange itself makes a handshake, so one such renewal
// keeps both ends' clocks fresh; the 60 s left before the fallback cover an exchange that fails
// once (ExchangeTimeout) and its first retries. Both ends use the same constants: the responder's
// fallback (stale) never fires before the initiator's early renewal would have arrived.
func (r *Runner) idleRenewal() time.Duration { return r.stale() * 2 / 3 }

// untilDue is how long until the next exchange with peer: period after the last one (last), or
// idleRenewal after the peer's last activity (that exchange or a later handshake), whichever is
// first.
func (r *Runner) untilDue(peer [keyLen]byte, last time.Time, period time.Duration) time.Duration {
	due, active := last.Add(period), last
	if look, err := r.Dev.Read(); err == nil {
		look.Scrub()
		if at := look.Shakes[peer]; at > 0 && time.Unix(at, 0).After(active) {
			active = time.Unix(at, 0)
		}
	}
	if idle := active.Add(r.idleRenewal()); idle.Before(due) {
		due = idle
	}
	return time.Until(due)
}

// initiateLoop renews the key with one peer this end initiates with: an interval (90-100 %, jitter)
// after the last exchange, earlier on an idle tunnel (untilDue), at once when no key is held, and
// after a failure within the back-off. Only this end's interval applies to the tunnel: the
// responder answers whenever it is asked (docs/security.md).
func (r *Runner) initiateLoop(ctx context.Context, own [keyLen]byte, p PeerConf, st *PeerState) {
	interval := time.Duration(r.Conf.Interval) * time.Second
	// jitter: 90-100 % of the interval, so that many tunnels do not renew in step
	jittered := func() time.Duration { return interval - time.Duration(rand.Int64N(int64(interval/10)+1)) }
	period := jittered()
	var last time.Time // the last completed exchange under this own key; zero: none, renew at once
	// No key held: the first exchange starts now. It is what makes the tunnel post-quantum, so no
	// delay of its own (a random one, up to a second, was here); renewals keep their jitter.
	var wait time.Duration
	r.States.mu.Lock()
	if st.psk != nil && st.pskOwn == own && st.Last > 0 {
		// A key agreed with this peer under this own key is held: the next exchange is its
		// renewal, due an interval after the last one. A reload of the file (another peer added
		// or removed) does not renew every peer at once: one write per changed peer only.
		last = time.Unix(st.Last, 0)
		if st.lastAt.After(last) {
			last = st.lastAt
		}
	}
	r.States.mu.Unlock()
	if !last.IsZero() {
		wait = max(0, r.untilDue(p.Pub, last, period))
	}
	retry, failing := r.RetryMin, false
	if last.IsZero() && r.FirstRetry > 0 {
		retry = min(r.FirstRetry, r.RetryMin)
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		if !last.IsZero() && !failing {
			// A handshake since the last look may have moved the early renewal later.
			if w := r.untilDue(p.Pub, last, period); w > 0 {
				wait = w
				continue
			}
		}
		if !r.untilOnDevice(ctx, p.Pub) {
			return
		}
		err := r.initiateOnce(ctx, own, p, st)
		if err == nil {
			last, period, retry, failing = time.Now(), jittered(), r.RetryMin, false
			wait = max(0, r.untilDue(p.Pub, last, period))
			continue
		}
		failing = true
		reason := reasonOf(err)
		log.Printf("%s: renewal with %s failed: %s", r.Conf.Device, keyText(p.Pub), reason)
		r.States.Failed(st, reason, errors.Is(err, errRefused))
		r.save()
		wait, retry = retry, min(2*retry, interval, retryCap)
	}
}

// untilOnDevice waits until the device holds peer (false: ctx ended). The VNF step writes this
// program's file before it adds the peer to the device (the file first: tunnels/pqpsk.sh), and
// a connection dialed in between is lost: its SYN goes into a device whose peers' allowed IPs do
// not match it, which drops it, and TCP sends it again only a second later (then 3 and 7 s). Once
// the peer is on the device, a SYN waits in WireGuard until the tunnel's first handshake (the
// peer's device adding this end starts one) and then goes at once. Woken by the step's kick
// after it changed the device; the watch interval is the fallback for a change made by hand.
func (r *Runner) untilOnDevice(ctx context.Context, peer [keyLen]byte) bool {
	for said := false; ; said = true {
		kicked := r.Kick.C()
		if shakes, err := r.devicePeers(kicked); err == nil {
			if _, on := shakes[peer]; on {
				return true
			}
		}
		if !said {
			log.Printf("%s: %s is not on the device yet: its exchange waits for it", r.Conf.Device, keyText(peer))
		}
		select {
		case <-ctx.Done():
			return false
		case <-kicked:
		case <-time.After(r.watchEvery()):
		}
	}
}

// deviceLook is one read of the device's peers (their handshakes), shared by every initiator
// waiting for its peer: the kick that follows a step wakes them all at once, and a hub's first
// session leaves one waiting per new spoke, so each reading the device itself made one read per
// waiting peer per kick.
type deviceLook struct {
	mu    sync.Mutex
	kick  <-chan struct{} // the kick's channel taken before the read
	at    time.Time
	peers map[[keyLen]byte]int64 // read-only once stored
}

// devicePeers reads the device's peers, or returns the last read when it was made since the kick
// whose channel the caller holds (kicked, taken before the call) and within the watch interval:
// a change the step made and kicked for is never missed, as every kick starts a new read. With
// no kick (nil) every call reads.
func (r *Runner) devicePeers(kicked <-chan struct{}) (map[[keyLen]byte]int64, error) {
	r.look.mu.Lock()
	defer r.look.mu.Unlock()
	if kicked != nil && r.look.peers != nil && r.look.kick == kicked && time.Since(r.look.at) < r.watchEvery() {
		return r.look.peers, nil
	}
	look, err := r.Dev.Read()
	if err != nil {
		return nil, err
	}
	look.Scrub()
	peers := look.Shakes
	r.look.kick, r.look.at, r.look.peers = kicked, time.Now(), peers
	return peers, nil
}

// initiateOnce runs one exchange with p. The peer is marked busy meanwhile, as the responder's
// answer does: restore and fallBackStale leave it alone, so a watch round that reads the device
// between install and Completed cannot put the previous key back.
func (r *Runner) initiateOnce(ctx context.Context, own [keyLen]byte, p PeerConf, st *PeerState) error {
	r.States.mu.Lock()
	st.busy = true
	r.States.mu.Unlock()
	defer func() { r.States.mu.Lock(); st.busy = false; r.States.mu.Unlock() }()
	began := time.Now()
	d := net.Dialer{Timeout: ExchangeTimeout, LocalAddr: &net.TCPAddr{IP: r.Conf.Listen.Addr().AsSlice()}}
	c, err := d.DialContext(ctx, "tcp", net.JoinHostPort(p.Addr.String(), itoa(int(r.Conf.Listen.Port()))))
	if err != nil {
		return err
	}
	defer c.Close()
	r.States.mu.Lock()
	epoch := nextEpoch(st.Epoch)
	r.States.mu.Unlock()
	var agreed [keyLen]byte
	err = Initiate(c, own, p.Pub, epoch, func(psk [keyLen]byte) error {
		agreed = psk
		return r.install(p.Pub, psk, false)
	})
	if err == nil {
		r.States.Completed(st, epoch, agreed, own)
		// the time from the dial: a first exchange's includes the wait for the tunnel's handshake
		log.Printf("%s: renewed the PSK with %s (epoch %d, %d ms)", r.Conf.Device, keyText(p.Pub), epoch,
			time.Since(began).Milliseconds())
		r.save()
	}
	return err
}

// reasonOf names a failure in one word (the status file's grammar).
func reasonOf(err error) string {
	var ne net.Error
	switch {
	case errors.Is(err, errMalformed):
		return "malformed"
	case errors.Is(err, errRefused):
		return "refused"
	case errors.As(err, &ne) && ne.Timeout():
		return "timeout"
	case errors.Is(err, errInstall):
		return "install"
	default:
		return "unreachable"
	}
}

var errInstall = errors.New("install")

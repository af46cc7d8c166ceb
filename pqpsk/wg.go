// The WireGuard side: one read of the device (its own public key, every peer's preshared key and
// latest handshake) and the one write this program makes: a peer's preshared key. In-process, with
// wgctrl (golang.zx2c4.com/wireguard/wgctrl, WireGuard's own Go library): a kernel device through
// generic netlink, a userspace one (wireguard-go, boringtun) through its UAPI socket
// /var/run/wireguard/<dev>.sock (https://www.wireguard.com/xplatform/). Neither starts a process:
// the `wg` tool this drove before cost three fork+execs per look, every 5 s, on every VNF, for
// the device's whole life (docs/figures.md, "pqwg7"). A key never travels on a command line.
package main

import (
	"errors"
	"fmt"
	"os"
	"time"

	"golang.zx2c4.com/wireguard/wgctrl"
	"golang.zx2c4.com/wireguard/wgctrl/wgtypes"
)

// Device is what an exchange needs of a WireGuard device (tests use a fake).
type Device interface {
	// Read is one look at the device: its own key, its peers, their keys and handshakes.
	Read() (*Look, error)
	// SetPSK installs psk for peer, a peer the device holds (never adds one).
	SetPSK(peer [keyLen]byte, psk [keyLen]byte) error
	// ClearPSK makes the peer's handshakes classical again (no preshared key).
	ClearPSK(peer [keyLen]byte) error
}

// Look is one read of a device.
type Look struct {
	// Own is the device's own public key; OwnKnown is false when the implementation does not
	// tell it (boringtun's UAPI returns no private_key: `wg show` says "(none)").
	Own      [keyLen]byte
	OwnKnown bool
	// PSKs is every peer's preshared key as the device holds it (none: absent). Read here on the
	// VNF only, never reported; Scrub zeroes it.
	PSKs map[[keyLen]byte][keyLen]byte
	// Shakes is every peer's latest handshake, unix seconds (0: none since the device began): its
	// keys are exactly the device's peers.
	Shakes map[[keyLen]byte]int64
}

// Scrub zeroes the preshared keys the look holds.
func (l *Look) Scrub() {
	if l == nil {
		return
	}
	for pub, psk := range l.PSKs {
		clear(psk[:])
		l.PSKs[pub] = psk
	}
	clear(l.PSKs)
}

// wgClient is the part of *wgctrl.Client this program uses.
type wgClient interface {
	Device(name string) (*wgtypes.Device, error)
	ConfigureDevice(name string, cfg wgtypes.Config) error
}

// deviceTimeout bounds one call to a device: a userspace implementation that accepts the UAPI
// connection and never answers would otherwise hold this device's runner, and with it every
// reload of the daemon (wgctrl sets no deadline on the socket; the wg tool had a 10 s time-out).
const deviceTimeout = 10 * time.Second

// WG drives one device in-process through a wgctrl client (shared by the daemon's devices).
type WG struct {
	Name    string
	Client  wgClient
	Timeout time.Duration // 0: deviceTimeout
	// one: at most one call to this device at a time, including one that timed out and still
	// waits for its answer, so a device that never answers costs one goroutine, not one per look.
	one chan struct{}
}

// NewWG is the device name on client.
func NewWG(client wgClient, name string) *WG {
	return &WG{Name: name, Client: client, one: make(chan struct{}, 1)}
}

// OpenClient opens the daemon's wgctrl client: generic netlink when the kernel has WireGuard, the
// UAPI sockets always.
func OpenClient() (*wgctrl.Client, error) { return wgctrl.New() }

var errDeviceTimeout = errors.New("the device did not answer in time")

// call runs f on the device within the time-out. f's result, should the caller have given up on
// it, is handed to drop (which zeroes what it holds).
func call[T any](w *WG, f func() (T, error), drop func(T)) (T, error) {
	var zero T
	limit := w.Timeout
	if limit <= 0 {
		limit = deviceTimeout
	}
	t := time.NewTimer(limit)
	defer t.Stop()
	select {
	case w.one <- struct{}{}:
	case <-t.C:
		return zero, fmt.Errorf("%s: %w (an earlier call still waits)", w.Name, errDeviceTimeout)
	}
	type result struct {
		v   T
		err error
	}
	done, gone := make(chan result), make(chan struct{})
	go func() {
		defer func() { <-w.one }()
		v, err := f()
		select {
		case done <- result{v, err}:
		case <-gone:
			drop(v)
		}
	}()
	select {
	case r := <-done:
		return r.v, r.err
	case <-t.C:
		close(gone)
		return zero, fmt.Errorf("%s: %w", w.Name, errDeviceTimeout)
	}
}

func scrubDevice(d *wgtypes.Device) {
	if d == nil {
		return
	}
	clear(d.PrivateKey[:])
	for i := range d.Peers {
		clear(d.Peers[i].PresharedKey[:])
	}
}

// Read is one wgctrl Device() call: a single UAPI "get=1" or netlink dump.
func (w *WG) Read() (*Look, error) {
	d, err := call(w, func() (*wgtypes.Device, error) { return w.Client.Device(w.Name) }, scrubDevice)
	if err != nil {
		return nil, err
	}
	defer scrubDevice(d)
	return lookOf(d), nil
}

// lookOf takes what this program uses from the library's parse, each value checked again (the
// library fixes key lengths by type; a device's answer is still not trusted to be sane): a peer
// with the all-zero key, a duplicate or a handshake before 1970 is left out, as the wg tool's
// output lines this read before were when they did not parse.
func lookOf(d *wgtypes.Device) *Look {
	l := &Look{PSKs: map[[keyLen]byte][keyLen]byte{}, Shakes: map[[keyLen]byte]int64{}}
	// The library derives the public key from the private one, and from an all-zero one when the
	// implementation returned none (boringtun): unknown then, as `wg show` says "(none)".
	if d.PrivateKey != (wgtypes.Key{}) && d.PublicKey != (wgtypes.Key{}) {
		l.Own, l.OwnKnown = d.PublicKey, true
	}
	seen := map[[keyLen]byte]bool{}
	for i := range d.Peers {
		p := &d.Peers[i]
		pub := [keyLen]byte(p.PublicKey)
		if pub == ([keyLen]byte{}) || seen[pub] {
			delete(l.Shakes, pub)
			delete(l.PSKs, pub)
			continue
		}
		seen[pub] = true
		// wgctrl's UAPI parse reads a handshake whose nanoseconds are exactly 0 as none (it wants
		// both fields above 0): one in 10^9, and the next look reads the next handshake.
		var at int64
		if !p.LastHandshakeTime.IsZero() {
			at = p.LastHandshakeTime.Unix()
			if at < 0 {
				continue
			}
		}
		l.Shakes[pub] = at
		if p.PresharedKey != (wgtypes.Key{}) {
			l.PSKs[pub] = [keyLen]byte(p.PresharedKey)
		}
	}
	return l
}

// setPSK writes one peer's preshared key (all-zero: none), only for a peer the device already
// holds (update_only: a peer the VNF step removed meanwhile is not added back). k is the call's
// own copy: zeroed once the library returned, also after a time-out gave up on it.
func (w *WG) setPSK(peer [keyLen]byte, k *wgtypes.Key) error {
	cfg := wgtypes.Config{Peers: []wgtypes.PeerConfig{{PublicKey: wgtypes.Key(peer), UpdateOnly: true, PresharedKey: k}}}
	_, err := call(w, func() (struct{}, error) {
		defer clear(k[:])
		return struct{}{}, w.Client.ConfigureDevice(w.Name, cfg)
	}, func(struct{}) {})
	if errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("%s: no such WireGuard device", w.Name)
	}
	return err
}

// SetPSK installs psk for peer. Its copies here are zeroed after the call; the library's own
// encoding of it (a hex line on the UAPI socket, a netlink attribute) is garbage Go does not let
// this program wipe.
func (w *WG) SetPSK(peer [keyLen]byte, psk [keyLen]byte) error {
	k := new(wgtypes.Key)
	*k = wgtypes.Key(psk)
	clear(psk[:])
	return w.setPSK(peer, k)
}

// ClearPSK removes peer's preshared key (an all-zero one: wg(8)'s "preshared-key /dev/null").
func (w *WG) ClearPSK(peer [keyLen]byte) error {
	return w.setPSK(peer, new(wgtypes.Key))
}

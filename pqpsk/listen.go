// The responder's listener: accepts only connections whose source is a configured peer's inner
// address, one exchange per peer at a time, at most maxConns at once.
//
// It listens on the device's inner address but is not bound to the device: Linux delivers a
// packet for a local address whatever interface it came in on (the weak host model), so a
// neighbour on the underlay can reach it. What holds is the source check plus TCP's handshake: a
// connection with a peer's inner address as its source completes only if its SYN-ACK, routed into
// the tunnel to the real peer, is answered, which a blind spoofer cannot do. SO_BINDTODEVICE is
// not used: it binds to the interface index, so a device re-created by wg-quick (which the daemon
// survives: keepInstalled) would leave the listener deaf until a restart. Refusals are counted
// and written at most once a second (saveSoon).
package main

import (
	"context"
	"errors"
	"log"
	"net"
	"net/netip"
	"strconv"
	"time"
)

func itoa(i int) string { return strconv.Itoa(i) }

func (r *Runner) listen(ctx context.Context, own [keyLen]byte) {
	var ln net.Listener
	for said := false; ; said = true {
		var err error
		lc := net.ListenConfig{}
		kicked := r.Kick.C() // the step brings the device (and its address) up, then kicks
		if ln, err = lc.Listen(ctx, "tcp", r.Conf.Listen.String()); err == nil {
			break
		}
		if !said {
			log.Printf("%s: cannot listen yet: %v", r.Conf.Device, err)
		}
		select {
		case <-ctx.Done():
			return
		case <-kicked:
		case <-time.After(2 * time.Second):
		}
	}
	go func() { <-ctx.Done(); ln.Close() }()
	byAddr := map[string]PeerConf{}
	for _, p := range r.Conf.Peers {
		if lessKey(p.Pub, own) { // the peer initiates
			byAddr[p.Addr.Unmap().String()] = p
		}
	}
	sem := make(chan struct{}, maxConns)
	for {
		c, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			time.Sleep(100 * time.Millisecond)
			continue
		}
		select {
		case sem <- struct{}{}:
			go func() { defer func() { <-sem }(); r.answer(c, own, byAddr) }()
		default:
			c.Close()
		}
	}
}

func (r *Runner) answer(c net.Conn, own [keyLen]byte, byAddr map[string]PeerConf) {
	defer c.Close()
	ap, err := netAddrPort(c.RemoteAddr())
	p, ok := byAddr[ap]
	if err != nil || !ok {
		r.States.mu.Lock()
		r.States.other++
		r.States.mu.Unlock()
		r.saveSoon()
		return
	}
	st := r.States.Peer(p.Pub, "responder")
	r.States.mu.Lock()
	if st.busy {
		r.States.mu.Unlock()
		return
	}
	st.busy = true
	r.States.mu.Unlock()
	defer func() { r.States.mu.Lock(); st.busy = false; r.States.mu.Unlock() }()
	resp := &Responder{Own: own, Peer: p.Pub, Accept: func(e uint64) bool {
		// Newer than the last completed one while a key agreed under this pair is held; any epoch
		// once none is (given up, voided, or never agreed): an initiator that rebooted with its
		// clock stepped back starts again (replay protection does not rest on epochs: States.Bind).
		r.States.mu.Lock()
		defer r.States.mu.Unlock()
		return e > st.Epoch || st.psk == nil || st.pskOwn != own
	}}
	var agreed [keyLen]byte
	epoch, err := resp.Respond(c, func(psk [keyLen]byte) error {
		agreed = psk
		if err := r.install(p.Pub, psk, true); err != nil {
			return errors.Join(errInstall, err)
		}
		return nil
	})
	if err != nil {
		log.Printf("%s: exchange from %s failed: %s", r.Conf.Device, keyText(p.Pub), reasonOf(err))
		r.States.Failed(st, reasonOf(err), errors.Is(err, errRefused))
		r.saveSoon()
		return
	}
	r.States.Completed(st, epoch, agreed, own)
	log.Printf("%s: renewed the PSK with %s (epoch %d)", r.Conf.Device, keyText(p.Pub), epoch)
	r.save()
}

func netAddrPort(a net.Addr) (string, error) {
	t, ok := a.(*net.TCPAddr)
	if !ok {
		return "", errors.New("not TCP")
	}
	ip, ok := netip.AddrFromSlice(t.IP)
	if !ok {
		return "", errors.New("bad address")
	}
	return ip.Unmap().String(), nil
}

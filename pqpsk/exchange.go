// One exchange over a connection: the initiator's and the responder's side, with exact
// message lengths and a deadline on every read, so a peer that sends garbage, too little or
// nothing costs one bounded connection and changes nothing.
package main

import (
	"crypto/mlkem"
	"errors"
	"fmt"
	"io"
	"net"
	"time"
)

// ExchangeTimeout bounds a whole exchange (both sides).
var ExchangeTimeout = 10 * time.Second

// readMsg reads exactly n bytes (a message has one fixed length per type).
func readMsg(c net.Conn, n int) ([]byte, error) {
	b := make([]byte, n)
	if _, err := io.ReadFull(c, b); err != nil {
		return nil, fmt.Errorf("read: %w", err)
	}
	return b, nil
}

// Installer installs a PSK for one peer; the exchange calls it exactly once, when both ends
// have confirmed the key.
type Installer func(psk [keyLen]byte) error

// Initiate runs the initiator's side on c: a fresh ML-KEM-768 key pair for this epoch, then
// install after the responder's confirmation and acknowledgement.
func Initiate(c net.Conn, own, peer [keyLen]byte, epoch uint64, install Installer) error {
	_ = c.SetDeadline(time.Now().Add(ExchangeTimeout))
	dk, err := mlkem.GenerateKey768()
	if err != nil {
		return err
	}
	m := &InitMsg{Epoch: epoch, Initiator: own, Responder: peer, EK: dk.EncapsulationKey().Bytes()}
	if _, err := c.Write(m.Marshal()); err != nil {
		return fmt.Errorf("send: %w", err)
	}
	b, err := readMsg(c, RespLen)
	if err != nil {
		return err
	}
	r, err := ParseResp(b)
	if err != nil {
		return refuse("%v", err)
	}
	k, err := Decapsulate(dk, m, r)
	if err != nil {
		return refuse("%v", err)
	}
	if _, err := c.Write(confMarshal(epoch, k.MAC("initiator", epoch))); err != nil {
		return fmt.Errorf("send: %w", err)
	}
	b, err = readMsg(c, AckLen)
	if err != nil {
		return err
	}
	if e, err := parseHeader(b, typAck, AckLen); err != nil || e != epoch {
		return refuse("no acknowledgement")
	}
	if err := install(k.PSK); err != nil {
		return errors.Join(errInstall, err)
	}
	return nil
}

// Responder is what the responder knows of one peer while it answers it.
type Responder struct {
	Own, Peer [keyLen]byte
	// Accept tells whether an epoch is newer than every epoch this peer completed.
	Accept func(epoch uint64) bool
}

// errRefused marks what the peer did wrong (counted as a refusal, not as a fault of ours).
var errRefused = errors.New("refused")

func refuse(format string, a ...any) error {
	return fmt.Errorf("%w: %s", errRefused, fmt.Sprintf(format, a...))
}

// Respond runs the responder's side on c. It installs the PSK only once the initiator proved
// it holds the same key, and acknowledges after installing; it returns the completed epoch.
func (r *Responder) Respond(c net.Conn, install Installer) (uint64, error) {
	_ = c.SetDeadline(time.Now().Add(ExchangeTimeout))
	b, err := readMsg(c, InitLen)
	if err != nil {
		return 0, refuse("%v", err)
	}
	m, err := ParseInit(b)
	if err != nil {
		return 0, refuse("%v", err)
	}
	if m.Initiator != r.Peer || m.Responder != r.Own {
		return 0, refuse("the message names other WireGuard keys")
	}
	if !r.Accept(m.Epoch) {
		return 0, refuse("epoch %d is not newer than the last completed one", m.Epoch)
	}
	k, resp, err := Encapsulate(m)
	if err != nil {
		return 0, refuse("%v", err)
	}
	if _, err := c.Write(resp.Marshal()); err != nil {
		return 0, fmt.Errorf("send: %w", err)
	}
	b, err = readMsg(c, ConfLen)
	if err != nil {
		return 0, refuse("no confirmation: %v", err)
	}
	epoch, mac, err := confParse(b)
	if err != nil || epoch != m.Epoch || !k.Verify("initiator", epoch, mac) {
		return 0, refuse("the initiator's confirmation does not verify")
	}
	if err := install(k.PSK); err != nil {
		return 0, err
	}
	_, _ = c.Write(ackMarshal(epoch))
	return epoch, nil
}

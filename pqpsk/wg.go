// The WireGuard side: the device's own public key, the peers' latest handshakes, and the one
// write this program makes: a peer's preshared key, passed on stdin, never on a command line.
package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// Device is what an exchange needs of a WireGuard device (tests use a fake).
type Device interface {
	SetPSK(peer [keyLen]byte, psk [keyLen]byte) error
	// PSKs is every peer's preshared key as the device holds it (none: absent).
	PSKs() (map[[keyLen]byte][keyLen]byte, error)
	// ClearPSK makes the peer's handshakes classical again (no preshared key).
	ClearPSK(peer [keyLen]byte) error
	// Handshakes is every peer's latest handshake, unix seconds (0: none since the device began):
	// its keys are exactly the device's peers.
	Handshakes() (map[[keyLen]byte]int64, error)
	// PublicKey is the device's own public key; ok is false when the implementation does not
	// tell it (boringtun's UAPI: "(none)").
	PublicKey() (pub [keyLen]byte, ok bool, err error)
}

// WG drives a device through the wg tool.
type WG struct {
	Tool string
	Name string
}

func (w *WG) run(stdin []byte, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, w.Tool, args...)
	cmd.Stdin = bytes.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(errb.String())
		return nil, fmt.Errorf("wg %s: %v: %.80s", args[0], err, msg)
	}
	return out.Bytes(), nil
}

// SetPSK installs psk for peer: `wg set <dev> peer <pub> preshared-key /dev/stdin`.
func (w *WG) SetPSK(peer [keyLen]byte, psk [keyLen]byte) error {
	text := []byte(base64.StdEncoding.EncodeToString(psk[:]) + "\n")
	defer clear(text)
	_, err := w.run(text, "set", w.Name, "peer", keyText(peer), "preshared-key", "/dev/stdin")
	return err
}

// ClearPSK removes peer's preshared key: `wg set <dev> peer <pub> preshared-key /dev/null`.
func (w *WG) ClearPSK(peer [keyLen]byte) error {
	_, err := w.run(nil, "set", w.Name, "peer", keyText(peer), "preshared-key", "/dev/null")
	return err
}

// Handshakes reads `wg show <dev> latest-handshakes`.
func (w *WG) Handshakes() (map[[keyLen]byte]int64, error) {
	out, err := w.run(nil, "show", w.Name, "latest-handshakes")
	if err != nil {
		return nil, err
	}
	m := map[[keyLen]byte]int64{}
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) != 2 {
			continue
		}
		pub, err1 := ParseKey(f[0])
		at, err2 := strconv.ParseInt(f[1], 10, 64)
		if err1 == nil && err2 == nil && at >= 0 {
			m[pub] = at
		}
	}
	return m, nil
}

// PublicKey reads `wg show <dev> public-key`.
func (w *WG) PublicKey() ([keyLen]byte, bool, error) {
	out, err := w.run(nil, "show", w.Name, "public-key")
	if err != nil {
		return [keyLen]byte{}, false, err
	}
	pub, err := ParseKey(strings.TrimSpace(string(out)))
	return pub, err == nil, nil
}

// PSKs reads `wg show <dev> preshared-keys` (read here on the VNF only, never reported).
func (w *WG) PSKs() (map[[keyLen]byte][keyLen]byte, error) {
	out, err := w.run(nil, "show", w.Name, "preshared-keys")
	defer clear(out)
	if err != nil {
		return nil, err
	}
	m := map[[keyLen]byte][keyLen]byte{}
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) != 2 {
			continue
		}
		pub, err1 := ParseKey(f[0])
		psk, err2 := ParseKey(f[1])
		if err1 == nil && err2 == nil {
			m[pub] = psk
		}
	}
	return m, nil
}

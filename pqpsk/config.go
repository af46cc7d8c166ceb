// The per-device configuration the VNF step writes, read strictly: a file is accepted whole or
// refused whole (the device then keeps running on what it had).
package main

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"fmt"
	"net/netip"
	"regexp"
	"strconv"
	"strings"
)

const (
	maxConfigBytes = 1 << 20
	maxPeers       = 4096
	MinInterval    = 10
	MaxInterval    = 86400
)

var devName = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,15}$`)

// PeerConf is one tunnel's other end: its WireGuard public key and its inner address.
type PeerConf struct {
	Pub  [keyLen]byte
	Addr netip.Addr
}

// DeviceConf is one device's configuration file.
type DeviceConf struct {
	Device   string
	Public   [keyLen]byte // this device's WireGuard public key (boringtun's UAPI does not tell it)
	Listen   netip.AddrPort
	Interval int // seconds between renewals
	Peers    []PeerConf
}

// ParseKey reads a WireGuard key in its canonical base64 form.
func ParseKey(s string) ([keyLen]byte, error) {
	var k [keyLen]byte
	b, err := base64.StdEncoding.Strict().DecodeString(s)
	if err != nil || len(b) != keyLen || len(s) != 44 {
		return k, fmt.Errorf("not a WireGuard key")
	}
	copy(k[:], b)
	return k, nil
}

func keyText(k [keyLen]byte) string { return base64.StdEncoding.EncodeToString(k[:]) }

func parseLine(c *DeviceConf, f []string, seen map[[keyLen]byte]bool) error {
	var err error
	switch {
	case f[0] == "device" && len(f) == 2 && devName.MatchString(f[1]):
		c.Device = f[1]
	case f[0] == "public" && len(f) == 2:
		c.Public, err = ParseKey(f[1])
	case f[0] == "listen" && len(f) == 2:
		c.Listen, err = netip.ParseAddrPort(f[1])
		if err == nil && (c.Listen.Port() == 0 || c.Listen.Addr().Zone() != "") {
			err = fmt.Errorf("bad listen address")
		}
	case f[0] == "interval" && len(f) == 2 && len(f[1]) <= 5:
		c.Interval, err = strconv.Atoi(f[1])
		if err == nil && (c.Interval < MinInterval || c.Interval > MaxInterval) {
			err = fmt.Errorf("interval outside %d..%d", MinInterval, MaxInterval)
		}
	case f[0] == "peer" && len(f) == 3:
		var p PeerConf
		if p.Pub, err = ParseKey(f[1]); err != nil {
			return err
		}
		if p.Addr, err = netip.ParseAddr(f[2]); err != nil || p.Addr.Zone() != "" {
			return fmt.Errorf("bad peer address")
		}
		if seen[p.Pub] || len(c.Peers) >= maxPeers {
			return fmt.Errorf("duplicate peer or too many peers")
		}
		seen[p.Pub] = true
		c.Peers = append(c.Peers, p)
	default:
		return fmt.Errorf("unknown line %q", strings.Join(f, " ")[:min(40, len(strings.Join(f, " ")))])
	}
	return err
}

// ParseConfig reads one device's file.
func ParseConfig(data []byte) (*DeviceConf, error) {
	if len(data) > maxConfigBytes {
		return nil, fmt.Errorf("configuration over %d bytes", maxConfigBytes)
	}
	c := &DeviceConf{}
	seen := map[[keyLen]byte]bool{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if err := parseLine(c, strings.Fields(line), seen); err != nil {
			return nil, err
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if c.Device == "" || !c.Listen.IsValid() || c.Interval == 0 || c.Public == ([keyLen]byte{}) {
		return nil, fmt.Errorf("device, public, listen and interval are required")
	}
	if seen[c.Public] {
		return nil, fmt.Errorf("a peer has this device's own key")
	}
	return c, nil
}

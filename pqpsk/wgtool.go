// The wg tool as the device's driver, when the daemon is told to use one (-wg PATH): for a
// device the in-process client cannot reach, and for tests' stand-ins of a device. One
// `wg show <dev> dump` per look (its own key, every peer's key and handshake: wg(8)), a
// `wg set` per write with the key on stdin, never on a command line.
package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
)

// WGTool drives a device through the wg tool.
type WGTool struct {
	Tool string
	Name string
}

func (w *WGTool) run(stdin []byte, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), deviceTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, w.Tool, args...)
	cmd.Stdin = bytes.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		clear(out.Bytes())
		msg := strings.TrimSpace(errb.String())
		return nil, fmt.Errorf("wg %s: %v: %.80s", args[0], err, msg)
	}
	return out.Bytes(), nil
}

// SetPSK installs psk for peer: `wg set <dev> peer <pub> preshared-key /dev/stdin`.
func (w *WGTool) SetPSK(peer [keyLen]byte, psk [keyLen]byte) error {
	text := []byte(base64.StdEncoding.EncodeToString(psk[:]) + "\n")
	defer clear(text)
	_, err := w.run(text, "set", w.Name, "peer", keyText(peer), "preshared-key", "/dev/stdin")
	return err
}

// ClearPSK removes peer's preshared key: `wg set <dev> peer <pub> preshared-key /dev/null`.
func (w *WGTool) ClearPSK(peer [keyLen]byte) error {
	_, err := w.run(nil, "set", w.Name, "peer", keyText(peer), "preshared-key", "/dev/null")
	return err
}

// Read is `wg show <dev> dump`: a first line "private-key public-key listen-port fwmark", then
// one line per peer "public-key preshared-key endpoint allowed-ips latest-handshake rx tx
// keepalive", tab-separated, "(none)" where a key is absent. A peer line that does not parse is
// left out.
func (w *WGTool) Read() (*Look, error) {
	out, err := w.run(nil, "show", w.Name, "dump")
	if err != nil {
		return nil, err
	}
	defer clear(out)
	return parseDump(out)
}

func parseDump(out []byte) (*Look, error) {
	l := &Look{PSKs: map[[keyLen]byte][keyLen]byte{}, Shakes: map[[keyLen]byte]int64{}}
	lines := bytes.Split(out, []byte("\n"))
	first := bytes.Split(lines[0], []byte("\t"))
	if len(first) != 4 {
		return nil, fmt.Errorf("wg show dump: its first line is not a device's")
	}
	if pub, err := ParseKey(string(first[1])); err == nil {
		l.Own, l.OwnKnown = pub, true
	}
	for _, line := range lines[1:] {
		f := bytes.Split(line, []byte("\t"))
		if len(f) != 8 {
			continue
		}
		pub, err1 := ParseKey(string(f[0]))
		at, err2 := strconv.ParseInt(string(f[4]), 10, 64)
		if err1 != nil || err2 != nil || at < 0 {
			continue
		}
		l.Shakes[pub] = at
		if psk, err := ParseKey(string(f[1])); err == nil {
			l.PSKs[pub] = psk
		}
	}
	return l, nil
}

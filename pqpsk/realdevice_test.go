//go:build realdevice

// The in-process driver (wg.go) against the real userspace implementations the charms ship, each
// in a network namespace of its own, with upstream's wg tool as the other side's reader: run as
// root by tests/e2e/test_pq_psk_device.py (go test -tags realdevice), which names the programs in
// VPNAAS_WIREGUARD_GO and VPNAAS_BORINGTUN.
package main

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

type realNS struct {
	t    *testing.T
	name string
}

func newNS(t *testing.T) *realNS {
	var b [4]byte
	_, _ = rand.Read(b[:])
	n := &realNS{t, "pqdev" + hex.EncodeToString(b[:])}
	n.host("ip", "netns", "add", n.name)
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", n.name).Run() })
	n.run("ip", "link", "set", "lo", "up")
	return n
}

func (n *realNS) host(args ...string) string {
	n.t.Helper()
	out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
	if err != nil {
		n.t.Fatalf("%v: %v: %s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

func (n *realNS) run(args ...string) string {
	n.t.Helper()
	return n.host(append([]string{"ip", "netns", "exec", n.name}, args...)...)
}

// until polls cond until it holds, failing after a generous deadline (a loaded machine).
func until(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal(what)
		}
	}
}

// device starts impl ("wireguard-go" or "boringtun") as a device in n, with a new private key;
// it returns the device's name and public key (as wg pubkey derives it).
func (n *realNS) device(impl, prog string) (string, [keyLen]byte) {
	t := n.t
	var b [3]byte
	_, _ = rand.Read(b[:])
	name := "pqd" + hex.EncodeToString(b[:])
	args := []string{"ip", "netns", "exec", n.name, prog}
	if impl == "boringtun" {
		args = append(args, "--foreground", "--disable-drop-privileges", name)
	} else {
		args = append(args, "-f", name)
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = append(os.Environ(), "WG_PROCESS_FOREGROUND=1")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
		_ = os.Remove("/var/run/wireguard/" + name + ".sock")
	})
	until(t, impl+" made no UAPI socket", func() bool {
		select {
		case <-exited:
			t.Fatalf("%s exited at its start", impl)
		default:
		}
		_, err := os.Stat("/var/run/wireguard/" + name + ".sock")
		return err == nil
	})
	priv := n.host("wg", "genkey")
	keyFile := t.TempDir() + "/key"
	if err := os.WriteFile(keyFile, []byte(priv+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	n.run("wg", "set", name, "private-key", keyFile, "listen-port", "0")
	n.run("ip", "link", "set", name, "up")
	pubText := strings.TrimSpace(runInput(t, priv+"\n", "wg", "pubkey"))
	pub, err := ParseKey(pubText)
	if err != nil {
		t.Fatal(err)
	}
	return name, pub
}

func runInput(t *testing.T, in string, args ...string) string {
	t.Helper()
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdin = strings.NewReader(in)
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

func openWG(t *testing.T, name string) *WG {
	c, err := OpenClient()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return NewWG(c, name)
}

func listenPort(t *testing.T, n *realNS, dev string) int {
	port, err := strconv.Atoi(n.run("wg", "show", dev, "listen-port"))
	if err != nil || port <= 0 {
		t.Fatalf("listen port %q", n.run("wg", "show", dev, "listen-port"))
	}
	return port
}

// wireguard-go: the own key, the peers, a PSK written and cleared as wg(8) reads it back, an
// update-only write for a peer the device does not hold, and a real handshake (persistent
// keepalive between two devices over loopback) read as wg(8) reads it, with the PSK both ends
// were given by SetPSK.
func TestRealWireguardGo(t *testing.T) {
	prog := os.Getenv("VPNAAS_WIREGUARD_GO")
	if prog == "" {
		t.Fatal("VPNAAS_WIREGUARD_GO names the wireguard-go to run (tests/e2e/test_pq_psk_device.py)")
	}
	n := newNS(t)
	a, pubA := n.device("wireguard-go", prog)
	b, pubB := n.device("wireguard-go", prog)
	wa, wb := openWG(t, a), openWG(t, b)
	l, err := wa.Read()
	if err != nil || !l.OwnKnown || l.Own != pubA || len(l.Shakes) != 0 || len(l.PSKs) != 0 {
		t.Fatalf("a new device read as %+v, %v", l, err)
	}
	n.run("wg", "set", a, "peer", keyText(pubB), "allowed-ips", "10.77.0.2/32",
		"endpoint", "127.0.0.1:"+strconv.Itoa(listenPort(t, n, b)))
	n.run("wg", "set", b, "peer", keyText(pubA), "allowed-ips", "10.77.0.1/32",
		"endpoint", "127.0.0.1:"+strconv.Itoa(listenPort(t, n, a)))
	psk := key(42)
	if err := wa.SetPSK(pubB, psk); err != nil {
		t.Fatal(err)
	}
	if got := n.run("wg", "show", a, "preshared-keys"); got != keyText(pubB)+"\t"+keyText(psk) {
		t.Fatalf("wg reads back %q", got)
	}
	if l, err = wa.Read(); err != nil || l.PSKs[pubB] != psk || len(l.Shakes) != 1 || l.Shakes[pubB] != 0 {
		t.Fatalf("read %+v, %v", l, err)
	}
	stranger := key(43)
	if err := wa.SetPSK(stranger, psk); err != nil {
		t.Fatal(err)
	}
	if got := n.run("wg", "show", a, "peers"); got != keyText(pubB) {
		t.Fatalf("a write for a peer the device does not hold added it: %q", got)
	}
	// So an exchange's install reads the device back: none for a peer it does not hold (the
	// responder then sends no acknowledgement), the key for one it holds.
	r := &Runner{Conf: &DeviceConf{Device: a, Public: pubA}, Dev: wa}
	if err := r.install(stranger, psk, false); !errors.Is(err, errNotHeld) {
		t.Fatalf("an install for a peer the device does not hold: %v", err)
	}
	if err := r.install(pubB, key(44), false); err != nil {
		t.Fatalf("an install for a peer the device holds: %v", err)
	}
	if got := n.run("wg", "show", a, "preshared-keys"); got != keyText(pubB)+"\t"+keyText(key(44)) {
		t.Fatalf("installed: wg reads back %q", got)
	}
	if err := wa.ClearPSK(pubB); err != nil {
		t.Fatal(err)
	}
	if got := n.run("wg", "show", a, "preshared-keys"); got != keyText(pubB)+"\t(none)" {
		t.Fatalf("cleared: wg reads back %q", got)
	}
	// A handshake under a PSK both ends got from SetPSK (a wrong encoding on either fails it).
	if err := wa.SetPSK(pubB, psk); err != nil {
		t.Fatal(err)
	}
	if err := wb.SetPSK(pubA, psk); err != nil {
		t.Fatal(err)
	}
	n.run("wg", "set", a, "peer", keyText(pubB), "persistent-keepalive", "1")
	var at int64
	until(t, "no handshake between the two devices", func() bool {
		l, err := wa.Read()
		if err != nil {
			t.Fatal(err)
		}
		at = l.Shakes[pubB]
		return at > 0
	})
	f := strings.Fields(n.run("wg", "show", a, "latest-handshakes"))
	if len(f) != 2 || f[1] != strconv.FormatInt(at, 10) {
		if l, _ := wa.Read(); len(f) != 2 || f[1] != strconv.FormatInt(l.Shakes[pubB], 10) {
			t.Fatalf("wg reads the handshake as %q, this program %d", f, at)
		}
	}
	if now := time.Now().Unix(); at > now || at < now-120 {
		t.Fatalf("handshake at %d, now %d", at, now)
	}
}

// boringtun: its UAPI returns no private key, so its own key is unknown (wg(8) says "(none)");
// its peers and their handshakes are read; and a PSK write is refused and leaves the device
// answering. boringtun 0.7.1 refuses `update_only` as a key it does not know (src/device/api.rs:
// EINVAL, wgctrl's errno=22) before its update of an existing peer, which would panic its API
// thread ("Modifying existing peers is not yet supported", src/device/mod.rs) and leave every
// later read hanging: `update_only` is what keeps a misdirected write from stopping the device's
// control plane, so the read after the write must still answer.
func TestRealBoringtun(t *testing.T) {
	prog := os.Getenv("VPNAAS_BORINGTUN")
	if prog == "" {
		t.Fatal("VPNAAS_BORINGTUN names the boringtun-cli to run (tests/e2e/test_pq_psk_device.py)")
	}
	n := newNS(t)
	a, _ := n.device("boringtun", prog)
	w := openWG(t, a)
	if got := n.run("wg", "show", a, "public-key"); got != "(none)" {
		t.Fatalf("wg(8) now tells boringtun's own key (%q): OwnKnown may be true", got)
	}
	peer := key(44)
	n.run("wg", "set", a, "peer", keyText(peer), "allowed-ips", "10.77.0.2/32")
	l, err := w.Read()
	if err != nil || l.OwnKnown || len(l.Shakes) != 1 || l.Shakes[peer] != 0 || len(l.PSKs) != 0 {
		t.Fatalf("read %+v, %v", l, err)
	}
	err = w.SetPSK(peer, key(45))
	t.Logf("boringtun's answer to a PSK write: %v", err)
	if err == nil {
		if l, _ := w.Read(); l.PSKs[peer] != key(45) {
			t.Fatal("SetPSK said yes and the device holds another key")
		}
		t.Log("this boringtun changes an existing peer's PSK: tests/e2e/test_pq_psk.py's boringtun test says what follows")
	}
	if l, err := w.Read(); err != nil || len(l.Shakes) != 1 {
		t.Fatalf("boringtun no longer answers after the PSK write: %+v, %v", l, err)
	}
}

package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.zx2c4.com/wireguard/wgctrl/wgtypes"
)

// fakeTool is a wg stand-in that records its arguments and stdin and prints out.
func fakeTool(t *testing.T, out string) (tool, args string) {
	dir := t.TempDir()
	args = filepath.Join(dir, "args")
	tool = filepath.Join(dir, "wg")
	script := "#!/bin/sh\nprintf '%s\\n' \"$@\" > " + args + "\ncat > /dev/null\nprintf '" + out + "'\n"
	if err := os.WriteFile(tool, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return tool, args
}

// `wg show <dev> dump` as wg(8) prints it: the device line (private key, public key, port,
// fwmark), then a line per peer; "(none)" where a key is absent (boringtun's own key, a peer
// without PSK); a line that does not parse is left out.
func TestToolReadsOneDump(t *testing.T) {
	a, b, own := keyText(key(1)), keyText(key(2)), keyText(key(9))
	tool, args := fakeTool(t, keyText(key(8))+"\\t"+own+"\\t51820\\toff\\n"+
		a+"\\t"+keyText(key(5))+"\\t(none)\\t10.0.0.2/32\\t1764270000\\t1\\t2\\t0\\n"+
		b+"\\t(none)\\t(none)\\t(none)\\t0\\t0\\t0\\toff\\n"+
		keyText(key(3))+"\\t(none)\\t(none)\\t(none)\\t-5\\t0\\t0\\toff\\nnot a line\\n"+a+" x y\\n")
	got, err := (&WGTool{Tool: tool, Name: "wg-s6a"}).Read()
	if err != nil {
		t.Fatal(err)
	}
	if !got.OwnKnown || got.Own != key(9) {
		t.Fatalf("own key %v %v", got.OwnKnown, got.Own)
	}
	if len(got.Shakes) != 2 || got.Shakes[key(1)] != 1764270000 || got.Shakes[key(2)] != 0 {
		t.Fatalf("handshakes %v", got.Shakes)
	}
	if len(got.PSKs) != 1 || got.PSKs[key(1)] != key(5) {
		t.Fatalf("psks %v", got.PSKs)
	}
	if data, _ := os.ReadFile(args); string(data) != "show\nwg-s6a\ndump\n" {
		t.Fatalf("args %q", data)
	}
	for _, bad := range []string{"", "(none)\\t(none)\\n"} {
		tool, _ := fakeTool(t, bad)
		if _, err := (&WGTool{Tool: tool, Name: "wg-s6a"}).Read(); err == nil {
			t.Fatalf("%q read as a device", bad)
		}
	}
	tool, _ = fakeTool(t, "(none)\\t(none)\\t0\\toff\\n")
	if got, err := (&WGTool{Tool: tool, Name: "wg-s6a"}).Read(); err != nil || got.OwnKnown {
		t.Fatalf("boringtun's device line: %v %v", got, err)
	}
}

// ClearPSK removes the key the way wg(8) documents it: preshared-key /dev/null.
func TestToolClearPSKSetsDevNull(t *testing.T) {
	tool, args := fakeTool(t, "")
	if err := (&WGTool{Tool: tool, Name: "wg-s6a"}).ClearPSK(key(3)); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(args)
	want := strings.Join([]string{"set", "wg-s6a", "peer", keyText(key(3)), "preshared-key", "/dev/null"}, "\n") + "\n"
	if string(data) != want {
		t.Fatalf("args %q", data)
	}
}

// A device as wgctrl parsed it (from a UAPI answer or a netlink dump): what this program uses is
// checked again, whatever the implementation answered.
func TestLookOfChecksWhatTheLibraryParsed(t *testing.T) {
	priv, err := wgtypes.GeneratePrivateKey()
	if err != nil {
		t.Fatal(err)
	}
	at := time.Unix(1764270000, 5)
	d := &wgtypes.Device{PrivateKey: priv, PublicKey: priv.PublicKey(), Peers: []wgtypes.Peer{
		{PublicKey: wgtypes.Key(key(1)), PresharedKey: wgtypes.Key(key(5)), LastHandshakeTime: at},
		{PublicKey: wgtypes.Key(key(2))},                                       // never a handshake, no PSK
		{PublicKey: wgtypes.Key(key(3)), LastHandshakeTime: time.Unix(-10, 0)}, // before 1970: left out
		{PublicKey: wgtypes.Key{}, PresharedKey: wgtypes.Key(key(6))},          // the all-zero key: left out
		{PublicKey: wgtypes.Key(key(4)), PresharedKey: wgtypes.Key(key(6))},    // twice: left out
		{PublicKey: wgtypes.Key(key(4))},
	}}
	l := lookOf(d)
	if !l.OwnKnown || l.Own != [keyLen]byte(priv.PublicKey()) {
		t.Fatal("own key not taken")
	}
	if len(l.Shakes) != 2 || l.Shakes[key(1)] != at.Unix() || l.Shakes[key(2)] != 0 {
		t.Fatalf("handshakes %v", l.Shakes)
	}
	if len(l.PSKs) != 1 || l.PSKs[key(1)] != key(5) {
		t.Fatalf("psks %v", l.PSKs)
	}
	l.Scrub()
	if len(l.PSKs) != 0 {
		t.Fatal("Scrub left keys")
	}
	// boringtun returns no private key: wgctrl derives a public key from the all-zero one.
	zero := wgtypes.Key{}
	if l := lookOf(&wgtypes.Device{PublicKey: zero.PublicKey()}); l.OwnKnown {
		t.Fatal("a key derived from no private key taken as the device's own")
	}
}

// fakeClient stands in for wgctrl's client: records the writes, answers reads with dev, and
// blocks every call while hold is not nil (until it is closed).
type fakeClient struct {
	mu    sync.Mutex
	dev   *wgtypes.Device
	cfgs  []wgtypes.Config
	psks  []wgtypes.Key // each write's key as the library got it, copied during the call
	calls int
	hold  chan struct{}
	err   error
}

func (c *fakeClient) wait() {
	c.mu.Lock()
	c.calls++
	hold := c.hold
	c.mu.Unlock()
	if hold != nil {
		<-hold
	}
}

func (c *fakeClient) Device(name string) (*wgtypes.Device, error) {
	c.wait()
	if c.err != nil {
		return nil, c.err
	}
	d := *c.dev
	d.Peers = append([]wgtypes.Peer(nil), c.dev.Peers...)
	return &d, nil
}

func (c *fakeClient) ConfigureDevice(name string, cfg wgtypes.Config) error {
	c.wait()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cfgs = append(c.cfgs, cfg)
	c.psks = append(c.psks, *cfg.Peers[0].PresharedKey)
	return c.err
}

// One write per SetPSK and ClearPSK: that peer only, update-only (a peer the step removed is not
// added back), the key or the all-zero key (none), and the key's copy zeroed after the call.
func TestWGWritesOnePeerUpdateOnly(t *testing.T) {
	c := &fakeClient{}
	w := NewWG(c, "wg-s6a")
	if err := w.SetPSK(key(1), key(5)); err != nil {
		t.Fatal(err)
	}
	if err := w.ClearPSK(key(2)); err != nil {
		t.Fatal(err)
	}
	if len(c.cfgs) != 2 || c.psks[0] != wgtypes.Key(key(5)) || c.psks[1] != (wgtypes.Key{}) {
		t.Fatalf("writes %+v", c.cfgs)
	}
	for i, cfg := range c.cfgs {
		if cfg.ReplacePeers || cfg.PrivateKey != nil || len(cfg.Peers) != 1 {
			t.Fatalf("write %d touches more than one peer's key: %+v", i, cfg)
		}
		p := cfg.Peers[0]
		if !p.UpdateOnly || p.Remove || p.ReplaceAllowedIPs || p.Endpoint != nil || len(p.AllowedIPs) != 0 || p.PresharedKey == nil {
			t.Fatalf("write %d: %+v", i, p)
		}
		if *p.PresharedKey != (wgtypes.Key{}) {
			t.Fatalf("write %d: the key's copy was not zeroed after the call", i)
		}
	}
	if c.cfgs[0].Peers[0].PublicKey != wgtypes.Key(key(1)) || c.cfgs[1].Peers[0].PublicKey != wgtypes.Key(key(2)) {
		t.Fatal("wrong peers")
	}
	c.err = os.ErrNotExist
	if err := w.SetPSK(key(1), key(5)); err == nil || !strings.Contains(err.Error(), "no such WireGuard device") {
		t.Fatalf("a missing device: %v", err)
	}
}

// A device that never answers costs one waiting call, not one per look, and each look gives up
// after the time-out; once it answers, the next look reads it.
func TestADeviceThatDoesNotAnswerHoldsOneCall(t *testing.T) {
	priv, _ := wgtypes.GeneratePrivateKey()
	c := &fakeClient{hold: make(chan struct{}), dev: &wgtypes.Device{PrivateKey: priv, PublicKey: priv.PublicKey(),
		Peers: []wgtypes.Peer{{PublicKey: wgtypes.Key(key(1)), PresharedKey: wgtypes.Key(key(5))}}}}
	w := NewWG(c, "wg-s6a")
	w.Timeout = 20 * time.Millisecond
	for i := 0; i < 3; i++ {
		if _, err := w.Read(); !errors.Is(err, errDeviceTimeout) {
			t.Fatalf("look %d: %v", i, err)
		}
	}
	c.mu.Lock()
	calls := c.calls
	c.mu.Unlock()
	if calls != 1 {
		t.Fatalf("%d calls wait on the device, want 1", calls)
	}
	close(c.hold)
	w.Timeout = time.Minute // the next look waits for the first call's end, then reads
	l, err := w.Read()
	if err != nil || l.PSKs[key(1)] != key(5) || !l.OwnKnown {
		t.Fatalf("after the device answered: %v %v", l, err)
	}
}

// Errors from the device pass through; nothing is read from a failed look.
func TestWGReadError(t *testing.T) {
	c := &fakeClient{err: errors.New("boom")}
	if _, err := NewWG(c, "wg-s6a").Read(); err == nil {
		t.Fatal("no error")
	}
}

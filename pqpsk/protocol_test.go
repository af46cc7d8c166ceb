package main

import (
	"bytes"
	"crypto/mlkem"
	"crypto/rand"
	"errors"
	"net"
	"testing"
	"time"
)

func key(b byte) (k [keyLen]byte) {
	for i := range k {
		k[i] = b
	}
	return
}

func TestExactSizes(t *testing.T) {
	if mlkem.EncapsulationKeySize768 != 1184 || mlkem.CiphertextSize768 != 1088 {
		t.Fatalf("ML-KEM-768 sizes: ek %d ct %d", mlkem.EncapsulationKeySize768, mlkem.CiphertextSize768)
	}
	dk, _ := mlkem.GenerateKey768()
	m := &InitMsg{Epoch: 7, Initiator: key(1), Responder: key(2), EK: dk.EncapsulationKey().Bytes()}
	if len(m.EK) != 1184 || len(m.Marshal()) != InitLen || InitLen != 1261 {
		t.Fatalf("init message %d bytes", len(m.Marshal()))
	}
	_, r, err := Encapsulate(m)
	if err != nil || len(r.CT) != 1088 || len(r.Marshal()) != RespLen || RespLen != 1133 {
		t.Fatalf("response: %v %d", err, len(r.Marshal()))
	}
	for _, n := range []int{0, 1, InitLen - 1, InitLen + 1} {
		b := append(m.Marshal(), 0)[:n]
		if _, err := ParseInit(b); err == nil {
			t.Errorf("an init message of %d bytes was accepted", n)
		}
	}
	if _, err := ParseResp(m.Marshal()[:RespLen]); err == nil {
		t.Error("an init message read as a response")
	}
	zero := m.Marshal()
	copy(zero[5:13], make([]byte, 8))
	if _, err := ParseInit(zero); err == nil {
		t.Error("epoch 0 accepted")
	}
}

// pair runs one exchange over an in-memory connection; it returns what each side installed.
func pair(t *testing.T, epoch uint64, accept func(uint64) bool, mitm func(i, r net.Conn)) (pi, pr *[keyLen]byte, ei, er error) {
	t.Helper()
	ExchangeTimeout = 500 * time.Millisecond
	ci, cr := net.Pipe()
	if mitm != nil {
		a, b := net.Pipe()
		c, d := net.Pipe()
		go mitm(b, c)
		ci, cr = a, d
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		resp := &Responder{Own: key(2), Peer: key(1), Accept: accept}
		_, er = resp.Respond(cr, func(k [keyLen]byte) error { pr = &k; return nil })
		cr.Close()
	}()
	ei = Initiate(ci, key(1), key(2), epoch, func(k [keyLen]byte) error { pi = &k; return nil })
	ci.Close()
	<-done
	return
}

func always(uint64) bool { return true }

func TestBothEndsAgree(t *testing.T) {
	seen := map[[keyLen]byte]bool{}
	for e := uint64(1); e <= 5; e++ {
		pi, pr, ei, er := pair(t, e, always, nil)
		if ei != nil || er != nil || pi == nil || pr == nil || *pi != *pr {
			t.Fatalf("epoch %d: %v %v", e, ei, er)
		}
		if seen[*pi] || *pi == [keyLen]byte{} {
			t.Fatal("a PSK repeated or is zero")
		}
		seen[*pi] = true
	}
}

func TestReplayedOrOldEpochRefused(t *testing.T) {
	pi, pr, ei, er := pair(t, 9, func(e uint64) bool { return e > 9 }, nil)
	if pi != nil || pr != nil || !errors.Is(er, errRefused) || ei == nil {
		t.Fatalf("old epoch: installed %v %v, errors %v %v", pi, pr, ei, er)
	}
}

// relay forwards i<->r, letting edit change the responder's answer (or withhold it).
func relay(edit func([]byte) []byte) func(i, r net.Conn) {
	return func(i, r net.Conn) {
		defer i.Close()
		defer r.Close()
		b, err := readMsg(i, InitLen)
		if err != nil {
			return
		}
		r.Write(b)
		if b, err = readMsg(r, RespLen); err != nil {
			return
		}
		if b = edit(b); b == nil {
			time.Sleep(time.Second) // withheld
			return
		}
		i.Write(b)
		if b, err = readMsg(i, ConfLen); err == nil {
			r.Write(b)
			if b, err = readMsg(r, AckLen); err == nil {
				i.Write(b)
			}
		}
	}
}

func TestHostileAnswers(t *testing.T) {
	cases := map[string]func([]byte) []byte{
		"random ciphertext": func(b []byte) []byte { rand.Read(b[hdrLen : hdrLen+1088]); return b },
		"flipped bit":       func(b []byte) []byte { b[hdrLen+100] ^= 1; return b },
		"other epoch":       func(b []byte) []byte { b[12]++; return b },
		"bad magic":         func(b []byte) []byte { b[0] = 'X'; return b },
		"short":             func(b []byte) []byte { return b[:RespLen-1] },
		"withheld":          func(b []byte) []byte { return nil },
	}
	for name, edit := range cases {
		pi, pr, ei, _ := pair(t, 3, always, relay(edit))
		if pi != nil || pr != nil || ei == nil {
			t.Errorf("%s: installed initiator=%v responder=%v err=%v", name, pi != nil, pr != nil, ei)
		}
	}
}

func TestHostileInitiator(t *testing.T) {
	ExchangeTimeout = 300 * time.Millisecond
	dk, _ := mlkem.GenerateKey768()
	good := (&InitMsg{Epoch: 5, Initiator: key(1), Responder: key(2), EK: dk.EncapsulationKey().Bytes()}).Marshal()
	otherKeys := (&InitMsg{Epoch: 5, Initiator: key(3), Responder: key(2), EK: dk.EncapsulationKey().Bytes()}).Marshal()
	badEK := bytes.Clone(good)
	for i := hdrLen + 64; i < InitLen; i++ {
		badEK[i] = 0xff // coefficients out of range: not an encapsulation key
	}
	for name, msg := range map[string][]byte{"short": good[:100], "long": append(bytes.Clone(good), 1),
		"other keys": otherKeys, "bad key": badEK, "good then no confirmation": good} {
		a, b := net.Pipe()
		var installed bool
		done := make(chan error)
		go func() {
			_, err := (&Responder{Own: key(2), Peer: key(1), Accept: always}).Respond(b,
				func([keyLen]byte) error { installed = true; return nil })
			b.Close()
			done <- err
		}()
		a.SetDeadline(time.Now().Add(time.Second))
		a.Write(msg)
		if name == "good then no confirmation" {
			readMsg(a, RespLen)
			a.Write(make([]byte, ConfLen)) // a zero MAC
		}
		a.Close()
		if err := <-done; err == nil || installed {
			t.Errorf("%s: accepted (installed=%v)", name, installed)
		}
	}
}

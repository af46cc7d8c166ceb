// The pq-psk protocol: its four messages, their exact sizes, and the derivation of the
// preshared key and the confirmation MACs. Pure functions; no network, no WireGuard.
//
// Written by hand because no library implements it: it is the project's own three-message
// ML-KEM-768 exchange (plus an acknowledgement) whose output is a WireGuard preshared key.
package main

import (
	"bytes"
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/mlkem"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
)

const (
	// Label binds every derived value to this protocol and its version.
	Label     = "vpnaas pq-psk v1"
	Mechanism = "ML-KEM-768"

	magic   = "VPQ1"
	keyLen  = 32 // a WireGuard public key, the PSK, a MAC
	hdrLen  = 4 + 1 + 8
	typInit = 1
	typResp = 2
	typConf = 3
	typAck  = 4

	// The exact sizes of the four messages: header, then the body.
	InitLen = hdrLen + 2*keyLen + mlkem.EncapsulationKeySize768 // 4+1+8+64+1184 = 1261
	RespLen = hdrLen + mlkem.CiphertextSize768 + keyLen         // 4+1+8+1088+32 = 1133
	ConfLen = hdrLen + keyLen                                   // 45
	AckLen  = hdrLen                                            // 13
)

var errMalformed = errors.New("malformed message")

// header writes magic, type and epoch.
func header(typ byte, epoch uint64, size int) []byte {
	b := make([]byte, hdrLen, size)
	copy(b, magic)
	b[4] = typ
	binary.BigEndian.PutUint64(b[5:], epoch)
	return b
}

// parseHeader checks a message's length, magic and type and returns its epoch.
func parseHeader(b []byte, typ byte, size int) (uint64, error) {
	if len(b) != size || string(b[:4]) != magic || b[4] != typ {
		return 0, errMalformed
	}
	epoch := binary.BigEndian.Uint64(b[5:hdrLen])
	if epoch == 0 {
		return 0, errMalformed
	}
	return epoch, nil
}

// InitMsg is the initiator's first message: the epoch, both WireGuard public keys (initiator
// first) and a fresh ML-KEM-768 encapsulation key.
type InitMsg struct {
	Epoch     uint64
	Initiator [keyLen]byte
	Responder [keyLen]byte
	EK        []byte
}

func (m *InitMsg) Marshal() []byte {
	b := header(typInit, m.Epoch, InitLen)
	b = append(b, m.Initiator[:]...)
	b = append(b, m.Responder[:]...)
	return append(b, m.EK...)
}

func ParseInit(b []byte) (*InitMsg, error) {
	epoch, err := parseHeader(b, typInit, InitLen)
	if err != nil {
		return nil, err
	}
	m := &InitMsg{Epoch: epoch, EK: bytes.Clone(b[hdrLen+2*keyLen:])}
	copy(m.Initiator[:], b[hdrLen:])
	copy(m.Responder[:], b[hdrLen+keyLen:])
	return m, nil
}

// RespMsg is the responder's answer: the ciphertext and the responder's confirmation MAC.
type RespMsg struct {
	Epoch uint64
	CT    []byte
	MAC   [keyLen]byte
}

func (m *RespMsg) Marshal() []byte {
	b := header(typResp, m.Epoch, RespLen)
	b = append(b, m.CT...)
	return append(b, m.MAC[:]...)
}

func ParseResp(b []byte) (*RespMsg, error) {
	epoch, err := parseHeader(b, typResp, RespLen)
	if err != nil {
		return nil, err
	}
	m := &RespMsg{Epoch: epoch, CT: bytes.Clone(b[hdrLen : hdrLen+mlkem.CiphertextSize768])}
	copy(m.MAC[:], b[hdrLen+mlkem.CiphertextSize768:])
	return m, nil
}

// ConfMsg carries the initiator's confirmation MAC.
func confMarshal(epoch uint64, mac [keyLen]byte) []byte {
	return append(header(typConf, epoch, ConfLen), mac[:]...)
}

func confParse(b []byte) (uint64, [keyLen]byte, error) {
	var mac [keyLen]byte
	epoch, err := parseHeader(b, typConf, ConfLen)
	if err == nil {
		copy(mac[:], b[hdrLen:])
	}
	return epoch, mac, err
}

func ackMarshal(epoch uint64) []byte { return header(typAck, epoch, AckLen) }

// Keys are what one exchange derives: the PSK and the key of the confirmation MACs.
type Keys struct {
	PSK     [keyLen]byte
	confirm [keyLen]byte
}

// transcript is the info every derivation is bound to: label, both public keys, the epoch and
// SHA-256(ek || ct).
func transcript(initiator, responder [keyLen]byte, epoch uint64, ek, ct []byte) []byte {
	h := sha256.New()
	h.Write(ek)
	h.Write(ct)
	info := make([]byte, 0, len(Label)+2*keyLen+8+sha256.Size)
	info = append(info, Label...)
	info = append(info, initiator[:]...)
	info = append(info, responder[:]...)
	info = binary.BigEndian.AppendUint64(info, epoch)
	return h.Sum(info)
}

// Derive computes the PSK and the confirmation key from the ML-KEM shared secret (HKDF-SHA256).
func Derive(shared []byte, initiator, responder [keyLen]byte, epoch uint64, ek, ct []byte) (*Keys, error) {
	if len(shared) != mlkem.SharedKeySize || len(ek) != mlkem.EncapsulationKeySize768 ||
		len(ct) != mlkem.CiphertextSize768 {
		return nil, errMalformed
	}
	info := transcript(initiator, responder, epoch, ek, ct)
	out, err := hkdf.Key(sha256.New, shared, nil, string(info)+" psk+confirm", 2*keyLen)
	if err != nil {
		return nil, err
	}
	k := &Keys{}
	copy(k.PSK[:], out[:keyLen])
	copy(k.confirm[:], out[keyLen:])
	clear(out)
	return k, nil
}

// MAC is one side's confirmation: HMAC-SHA256 under the confirmation key over role and epoch.
func (k *Keys) MAC(role string, epoch uint64) [keyLen]byte {
	m := hmac.New(sha256.New, k.confirm[:])
	m.Write([]byte(Label + " confirm " + role))
	m.Write(binary.BigEndian.AppendUint64(nil, epoch))
	var out [keyLen]byte
	copy(out[:], m.Sum(nil))
	return out
}

// Verify compares a received MAC in constant time.
func (k *Keys) Verify(role string, epoch uint64, got [keyLen]byte) bool {
	want := k.MAC(role, epoch)
	return hmac.Equal(want[:], got[:])
}

// Encapsulate is the responder's side: from the initiator's message to its keys and answer.
func Encapsulate(m *InitMsg) (*Keys, *RespMsg, error) {
	ek, err := mlkem.NewEncapsulationKey768(m.EK)
	if err != nil {
		return nil, nil, fmt.Errorf("encapsulation key: %w", err)
	}
	shared, ct := ek.Encapsulate()
	k, err := Derive(shared, m.Initiator, m.Responder, m.Epoch, m.EK, ct)
	clear(shared)
	if err != nil {
		return nil, nil, err
	}
	return k, &RespMsg{Epoch: m.Epoch, CT: ct, MAC: k.MAC("responder", m.Epoch)}, nil
}

// Decapsulate is the initiator's side: from its decapsulation key and the answer to its keys,
// refusing an answer whose MAC does not verify (a wrong or forged ciphertext: ML-KEM's
// implicit rejection then yields an unrelated secret).
func Decapsulate(dk *mlkem.DecapsulationKey768, m *InitMsg, r *RespMsg) (*Keys, error) {
	if r.Epoch != m.Epoch {
		return nil, errors.New("answer for another epoch")
	}
	shared, err := dk.Decapsulate(r.CT)
	if err != nil {
		return nil, fmt.Errorf("ciphertext: %w", err)
	}
	k, err := Derive(shared, m.Initiator, m.Responder, m.Epoch, m.EK, r.CT)
	clear(shared)
	if err != nil {
		return nil, err
	}
	if !k.Verify("responder", m.Epoch, r.MAC) {
		return nil, errors.New("the responder's confirmation does not verify")
	}
	return k, nil
}

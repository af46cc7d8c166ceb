// Per-peer state: what the status subcommand, the VNF step's report and the metrics read.
// Nothing secret is in it (public keys, counters, times, one reason word).
package main

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// PeerState is one peer's record; its fields change under the device's lock.
type PeerState struct {
	Pub      [keyLen]byte
	Role     string // initiator | responder
	State    string // waiting (no PSK yet) | ok | failing
	Epoch    uint64 // the last completed epoch (monotonic)
	Renewals uint64
	Last     int64 // unix time of the last renewal
	Refusals uint64
	Failures uint64 // consecutive failed exchanges (initiator)
	Reason   string // why the last exchange failed: one word
	busy     bool
	psk      *[keyLen]byte // the key both ends agreed last (memory only, never saved)
	// pskOwn is the device's own public key the key was agreed under: a PSK is bound to the pair
	// of public keys (the derivation's info), so it is void once the device's key changed.
	pskOwn [keyLen]byte
	used   int64     // unix time the key was last seen in use: its exchange or a handshake
	lastAt time.Time // the last completed exchange, exactly (Last is whole seconds)
	listed bool      // the device's file lists the peer; an unlisted record only keeps its key a while
}

// States holds every peer of one device.
type States struct {
	mu    sync.Mutex
	dev   string
	peers map[[keyLen]byte]*PeerState
	other uint64 // refusals of connections from no configured peer
	// own is the device's public key the records' epochs were counted under (zero: unknown).
	own   [keyLen]byte
	saves uint64 // status file writes (what the rate limit bounds; tests read it)
	// keyAt is when Bind saw the own key change (unix seconds; 0: no change seen): a handshake a
	// peer's entry shows from before it is the previous key pair's (a device keeps the time of a
	// peer's latest handshake across a new private key).
	keyAt int64
}

func NewStates(dev string) *States {
	return &States{dev: dev, peers: map[[keyLen]byte]*PeerState{}}
}

func (s *States) line(p *PeerState) string {
	return fmt.Sprintf("peer %s %s role %s mechanism %s state %s epoch %d renewals %d last %d refusals %d failures %d reason %s",
		s.dev, keyText(p.Pub), p.Role, Mechanism, p.State, p.Epoch, p.Renewals, p.Last, p.Refusals, p.Failures, p.Reason)
}

// Save writes the device's status file atomically (a reader never sees half of it).
func (s *States) Save(dir string) error {
	s.mu.Lock()
	lines := []string{fmt.Sprintf("device %s refusals %d", s.dev, s.other)}
	if s.own != ([keyLen]byte{}) {
		lines[0] += " public " + keyText(s.own)
	}
	s.saves++
	for _, p := range s.peers {
		if p.listed {
			lines = append(lines, s.line(p))
		}
	}
	s.mu.Unlock()
	sort.Strings(lines[1:])
	tmp, err := os.CreateTemp(dir, "."+s.dev+".*")
	if err != nil {
		return err
	}
	_, err = tmp.WriteString(strings.Join(lines, "\n") + "\n")
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), filepath.Join(dir, s.dev+".status"))
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
	return err
}

// Load reads the epochs and counters a previous run saved (monotonic epochs survive a restart).
func (s *States) Load(dir string) {
	f, err := os.Open(filepath.Join(dir, s.dev+".status"))
	if err != nil {
		return
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		w := strings.Fields(sc.Text())
		if len(w) == 6 && w[0] == "device" && w[1] == s.dev && w[4] == "public" {
			s.own, _ = ParseKey(w[5]) // unreadable: zero, unknown
		}
		if len(w) != 21 || w[0] != "peer" || w[1] != s.dev {
			continue
		}
		pub, err := ParseKey(w[2])
		if err != nil {
			continue
		}
		p := &PeerState{Pub: pub, Role: w[4], State: w[8], Reason: w[20]}
		p.Epoch, _ = strconv.ParseUint(w[10], 10, 64)
		p.Renewals, _ = strconv.ParseUint(w[12], 10, 64)
		p.Last, _ = strconv.ParseInt(w[14], 10, 64)
		p.Refusals, _ = strconv.ParseUint(w[16], 10, 64)
		s.peers[pub] = p
	}
}

// Epochs are bound to the pair of public keys, as the PSK is: an initiator counts them on its own
// clock, so a record kept across a change of either key (a rotation, which swaps the roles half the
// time; records are keyed by the peer's key, so a new peer key is a new record) would make the
// responder compare the new initiator's epochs with another clock's, and refuse them all under
// clock skew. They are reset to 0 when the role or the device's own key changes. Replay protection
// does not rest on them: a replayed init is answered with a fresh encapsulation, whose key only the
// holder of the initiator's decapsulation key can confirm (Respond installs only after the
// initiator's MAC verifies), so the check refuses only stale epochs of an honest peer.

// Bind records the device's own public key; a change resets every record's epoch.
func (s *States) Bind(own [keyLen]byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.own != own {
		for _, p := range s.peers {
			p.Epoch = 0
		}
		if s.own != ([keyLen]byte{}) {
			s.keyAt = time.Now().Unix()
		}
		s.own = own
	}
}

// KeyAt is when the own key was last seen to change (unix seconds; 0: never seen).
func (s *States) KeyAt() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.keyAt
}

// Peer returns (creating it) the record of pub in role; a change of role resets its epoch.
func (s *States) Peer(pub [keyLen]byte, role string) *PeerState {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.peers[pub]
	if p == nil {
		p = &PeerState{Pub: pub, State: "waiting", Reason: "-"}
		s.peers[pub] = p
	}
	if p.Role != role {
		p.Epoch = 0
	}
	p.Role, p.listed = role, true
	return p
}

// Agreed is the key agreed with pub under the device's own key own (ok false: none).
func (s *States) Agreed(pub, own [keyLen]byte) (psk [keyLen]byte, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.peers[pub]
	if p == nil || p.psk == nil || p.pskOwn != own {
		return psk, false
	}
	return *p.psk, true
}

// Adopt takes the key a device holds for a listed peer this program has no key of in memory (it
// was restarted; only this program sets a managed peer's key): it is put back like an agreed
// one should the device lose it, and given up like one (fallBackStale).
func (s *States) Adopt(pub, own, psk [keyLen]byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p := s.peers[pub]; p != nil && p.listed && p.psk == nil {
		p.psk, p.pskOwn, p.used = &psk, own, time.Now().Unix()
	}
}

// Lookup returns the record of pub, or nil.
func (s *States) Lookup(pub [keyLen]byte) *PeerState {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.peers[pub]
}

// FellBack records that the peer's key was given up (fallBackStale): nothing agreed is held any
// more, so nothing is put back; the state is "failing" with the reason "stale" until an exchange
// completes.
func (s *States) FellBack(p *PeerState) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p.psk = nil
	p.State, p.Reason = "failing", "stale"
}

// Keep marks the records of peers no longer configured unlisted. One with an agreed key keeps it
// (Expire): a peer the step removed and added again (its relation data refused for a while, then
// good again) gets the key back that the other end still holds, instead of a classical entry
// that no handshake with that end can complete.
func (s *States) Keep(pubs map[[keyLen]byte]bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, p := range s.peers {
		p.listed = pubs[k]
		if !p.listed && p.psk == nil {
			delete(s.peers, k)
		}
	}
}

// Expire forgets the unlisted records whose key was not in use for longer than stale: by then
// the other end gave that key up too (fallBackStale).
func (s *States) Expire(stale time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, p := range s.peers {
		if !p.listed && (p.psk == nil || time.Since(time.Unix(p.used, 0)) > stale) {
			delete(s.peers, k)
		}
	}
}

// Used records that the peer's key was in use at unix time at (a handshake).
func (s *States) Used(p *PeerState, at int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if at > p.used {
		p.used = at
	}
}

// Void forgets a key agreed under another own key than the device's (a key rotation).
func (s *States) Void(p *PeerState) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p.psk = nil
	if p.State == "ok" {
		p.State = "waiting"
	}
}

// Completed records a renewal at epoch with its key, agreed under the device's own key own.
func (s *States) Completed(p *PeerState, epoch uint64, psk, own [keyLen]byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p.psk, p.pskOwn, p.used = &psk, own, time.Now().Unix()
	p.Epoch, p.State, p.Reason, p.Failures = epoch, "ok", "-", 0
	p.Renewals++
	p.lastAt = time.Now()
	p.Last = p.lastAt.Unix()
}

// Failed records a failed exchange; refused tells whether the peer broke the protocol.
func (s *States) Failed(p *PeerState, reason string, refused bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if refused {
		p.Refusals++
	}
	if p.Role == "initiator" {
		p.Failures++
	}
	p.Reason = reason
	if p.Role == "initiator" || p.Epoch == 0 {
		p.State = "failing"
	}
}

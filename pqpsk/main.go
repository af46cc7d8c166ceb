// pq-psk: a post-quantum preshared key per WireGuard tunnel, from ML-KEM-768 (FIPS 203),
// derived on the two VNFs over the tunnel itself and renewed periodically.
//
//	pq-psk run [-config DIR] [-state DIR] [-ready FIFO] [-wg PATH]   the daemon: one runner per DIR/*.conf
//	pq-psk status [-state DIR]                         every device's per-peer state
//	pq-psk version
//
// The daemon reloads a device when its file changes (checked every 2 s); a file that does not
// parse is refused whole and the device keeps its running configuration. It reads and writes the
// devices in-process (wg.go: netlink or the UAPI socket); -wg names a wg tool to drive them with
// instead (wgtool.go).
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"
)

const version = "1.0.0"

type running struct {
	data   string
	cancel context.CancelFunc
	done   chan struct{}
	kick   *Wakeup
}

// manager keeps one runner per configuration file.
type manager struct {
	configDir, stateDir string
	// device is the driver of the named device (in-process, or the wg tool: -wg).
	device func(name string) Device
	runs   map[string]*running
	states map[string]*States
}

func (m *manager) stop(dev string) {
	if r := m.runs[dev]; r != nil {
		r.cancel()
		<-r.done
		delete(m.runs, dev)
	}
}

func (m *manager) start(dev string, data []byte) {
	conf, err := ParseConfig(data)
	if err == nil && conf.Device != dev {
		err = fmt.Errorf("file %s.conf names device %s", dev, conf.Device)
	}
	if err != nil {
		log.Printf("%s: configuration refused, the running one stays: %v", dev, err)
		if r := m.runs[dev]; r != nil {
			r.data = string(data) // refused once, not again every scan
		} else {
			m.runs[dev] = &running{data: string(data), cancel: func() {}, done: closed(), kick: &Wakeup{}}
		}
		return
	}
	m.stop(dev)
	if m.states[dev] == nil {
		m.states[dev] = NewStates(dev)
		m.states[dev].Load(m.stateDir)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{data: string(data), cancel: cancel, done: make(chan struct{}), kick: &Wakeup{}}
	m.runs[dev] = r
	run := &Runner{Conf: conf, Dev: m.device(dev), States: m.states[dev],
		StateDir: m.stateDir, RetryMin: 5 * time.Second, FirstRetry: 200 * time.Millisecond, ConfigPath: filepath.Join(m.configDir, dev+".conf"),
		Kick: r.kick}
	go func() { defer close(r.done); run.Run(ctx) }()
	log.Printf("%s: running with %d peers, renewal every %d s", dev, len(conf.Peers), conf.Interval)
}

// kick makes every runner's watch look at its device at once.
func (m *manager) kick() {
	for _, r := range m.runs {
		r.kick.Fire()
	}
}

func modTime(path string) time.Time {
	if fi, err := os.Stat(path); err == nil {
		return fi.ModTime()
	}
	return time.Time{}
}

func closed() chan struct{} { c := make(chan struct{}); close(c); return c }

// scan starts, restarts and stops runners to match the configuration folder.
func (m *manager) scan() {
	files, _ := filepath.Glob(filepath.Join(m.configDir, "*.conf"))
	seen := map[string]bool{}
	for _, f := range files {
		dev := strings.TrimSuffix(filepath.Base(f), ".conf")
		data, err := readBounded(f)
		if err != nil || !devName.MatchString(dev) {
			continue
		}
		seen[dev] = true
		if r := m.runs[dev]; r == nil || r.data != string(data) {
			m.start(dev, data)
		}
	}
	for dev := range m.runs {
		if !seen[dev] {
			m.stop(dev)
			delete(m.states, dev)
			os.Remove(filepath.Join(m.stateDir, dev+".status"))
			log.Printf("%s: no configuration any more: stopped", dev)
		}
	}
}

func readBounded(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, maxConfigBytes+1))
}

func status(stateDir string, w io.Writer) error {
	files, err := filepath.Glob(filepath.Join(stateDir, "*.status"))
	if err != nil {
		return err
	}
	sort.Strings(files)
	for _, f := range files {
		data, err := readBounded(f)
		if err != nil {
			return err
		}
		if _, err := w.Write(data); err != nil {
			return err
		}
	}
	return nil
}

// signalReady tells the VNF step that started this daemon that it runs (its state folder made,
// its lock taken): one line into the step's FIFO, so that the step goes on at once rather than at
// its next look. Opened without waiting and only if it is a FIFO: with no reader (a step killed
// meanwhile) or anything else at that path there is nobody to tell, and the daemon runs on.
func signalReady(path string) {
	if path == "" {
		return
	}
	f, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Mode()&os.ModeNamedPipe != 0 {
		_, _ = f.WriteString("ready\n")
	}
}

// devices is how the daemon reaches its devices: one wgctrl client for all of them (it opens
// generic netlink only when the kernel has WireGuard), or the wg tool named by -wg.
func devices(tool string) func(string) Device {
	if tool != "" {
		return func(name string) Device { return &WGTool{Tool: tool, Name: name} }
	}
	client, err := OpenClient()
	if err != nil {
		log.Fatalf("no access to WireGuard devices: %v", err)
	}
	return func(name string) Device { return NewWG(client, name) }
}

func main() {
	log.SetFlags(0)
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: pq-psk run|status|version [flags]")
		os.Exit(2)
	}
	fs := flag.NewFlagSet(os.Args[1], flag.ExitOnError)
	configDir := fs.String("config", "/etc/wireguard/pq-psk", "the devices' configuration files (<dev>.conf)")
	stateDir := fs.String("state", "/run/wireguard/vpnaas-pq-psk", "where the per-device status files are written")
	wgTool := fs.String("wg", "", "drive the devices with this wg tool (a process per read and write) instead of in-process")
	ready := fs.String("ready", "", "a FIFO to say \"ready\" into once the state is locked (the VNF step that starts it)")
	_ = fs.Parse(os.Args[2:])
	switch os.Args[1] {
	case "version", "--version":
		fmt.Printf("pq-psk %s %s\n", version, Mechanism)
	case "status":
		if err := status(*stateDir, os.Stdout); err != nil {
			log.Fatal(err)
		}
	case "run":
		log.SetOutput(&cappedLog{f: os.Stderr, max: logCap})
		log.SetFlags(log.LUTC | log.Ldate | log.Lmicroseconds) // when each exchange began and ended
		if err := os.MkdirAll(*stateDir, 0o755); err != nil {
			log.Fatal(err)
		}
		lock, err := lockState(*stateDir)
		if err != nil {
			log.Fatal(err)
		}
		defer lock.Close() // held for the daemon's life (the loop below never ends)
		signalReady(*ready)
		m := &manager{configDir: *configDir, stateDir: *stateDir, device: devices(*wgTool),
			runs: map[string]*running{}, states: map[string]*States{}}
		// The kick file: the VNF step touches it when it has just written the devices or the
		// files (tunnels/pqpsk.sh): the files are read and every device looked at now, not at the
		// next look. A file, not a signal: a signal that came before the handler was installed
		// would end a daemon just started. Watched with inotify (kickwatch.go), looked at every
		// 200 ms where that fails; the files are read every 2 s in any case.
		kick := filepath.Join(*stateDir, "kick")
		kicks := watchKick(*stateDir, "kick") // before the first look: no touch falls between
		seen := modTime(kick)
		for {
			m.scan()
			rescan := time.After(2 * time.Second)
			for waiting := true; waiting; {
				var look <-chan time.Time
				if kicks == nil {
					look = time.After(200 * time.Millisecond)
				}
				act := false
				select {
				case <-rescan:
					waiting = false
				case _, ok := <-kicks: // acted on even if the time did not change (its granularity)
					act = ok
					if !ok {
						kicks = nil
					}
				case <-look:
				}
				if t := modTime(kick); !t.Equal(seen) {
					seen, act = t, true
				}
				if act {
					m.scan()
					m.kick()
				}
			}
		}
	default:
		fmt.Fprintln(os.Stderr, "usage: pq-psk run|status|version [flags]")
		os.Exit(2)
	}
}

//go:build ignore

// juju_parse: every `juju` command line of the corpus through Juju's own command-line parsing,
// without a controller. Ours; built at run time against the user's Juju source tree (JUJU_SRC)
// by bundle.osm_conformance.juju_cli, from inside that tree so its go.mod pins every import:
//
//	cd JUJU_SRC && go build -o BIN /path/to/juju_parse.go
//	BIN --corpus corpus.json --out result.json [--controller NAME]
//
// What runs per line is what the `juju` binary runs before it contacts a controller: Juju's
// SuperCommand (jujucmd.NewSuperCommand, the same one cmd/juju/commands builds) with the
// command registered by its own constructor, the gnuflag parse of the top-level flags, then
// SuperCommand.Init (the subcommand's flags, the model wrapper's -m handling against a client
// store, the command's own Init). The client store is Juju's in-memory one (jujuclient.MemStore)
// holding one controller, the current one, named --controller; `-m other:model` therefore names
// a controller the store does not have and is refused as the real client would. A line whose
// command is not registered here is refused ("unrecognized command"): never counted as parsed.
// After Init, the model named by -m is added to the store the way `juju models` records it
// (jujuclient's own validation of a model name); a name no Juju model can have is refused. The
// charm a `--path` names is read the way refresh's local-charm refresher reads it before any
// API call (core/charm NewCharmAtPath: a relative path not starting with "." is not taken as a
// local charm, then the charm archive is read and checked for the series): the caller puts a real
// charm at each path (bundle.osm_conformance.juju_cli) and runs this in the directory the deploy
// tool runs juju from. Series "bionic": the LXD proxy machines N2VC creates for OSM.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"reflect"
	"strings"

	"github.com/juju/cmd/v3"
	"github.com/juju/gnuflag"

	jujucmd "github.com/juju/juju/cmd"
	"github.com/juju/juju/cmd/juju/application"
	corecharm "github.com/juju/juju/core/charm"
	"github.com/juju/juju/jujuclient"
	jujuversion "github.com/juju/juju/version"
)

type item struct {
	Program string   `json:"program"`
	Argv    []string `json:"argv"`
}

type result struct {
	Index   int    `json:"index"`
	OK      bool   `json:"ok"`
	Message string `json:"message"`
}

type storeSetter interface {
	SetClientStore(jujuclient.ClientStore)
}

const controllerUUID = "deadbeef-1bad-500d-9000-4b1d0d06f00d"
const modelUUID = "deadbeef-0bad-400d-8000-4b1d0d06f00d"

// commands: the Juju commands the deploy tool runs, by their own constructors.
func commands() map[string]func() cmd.Command {
	return map[string]func() cmd.Command{
		"refresh": application.NewRefreshCommand,
	}
}

func parse(argv []string, controller string) (string, error) {
	store := jujuclient.NewMemStore()
	if err := store.AddController(controller, jujuclient.ControllerDetails{ControllerUUID: controllerUUID}); err != nil {
		return "", fmt.Errorf("the client store refuses controller %q: %v", controller, err)
	}
	if err := store.SetCurrentController(controller); err != nil {
		return "", err
	}
	super := jujucmd.NewSuperCommand(cmd.SuperCommandParams{Name: "juju", Doc: "", Log: jujucmd.DefaultLog})
	for _, newCommand := range commands() {
		c := newCommand()
		if s, ok := c.(storeSetter); ok {
			s.SetClientStore(store)
		}
		super.Register(c)
	}
	f := gnuflag.NewFlagSetWithFlagKnownAs("juju", gnuflag.ContinueOnError, cmd.FlagAlias(super, "flag"))
	f.SetOutput(io.Discard)
	super.SetFlags(f)
	if err := f.Parse(super.AllowInterspersedFlags(), argv); err != nil {
		return "", err
	}
	if err := super.Init(f.Args()); err != nil {
		return "", err
	}
	// The model the line names, as the store records it (ModelCommand.ModelIdentifier needs
	// Run to have started, so it is read from -m/--model here).
	model := option(argv, "-m", "--model")
	if path := option(argv, "--path"); path != "" {
		if err := readCharm(path); err != nil {
			return "", fmt.Errorf("--path %s: %v", path, err)
		}
	}
	if model != "" {
		name := model
		if i := strings.Index(name, ":"); i >= 0 {
			name = name[i+1:]
		}
		if !strings.Contains(name, "/") {
			name = "admin/" + name
		}
		details := jujuclient.ModelDetails{ModelUUID: modelUUID, ModelType: "iaas"}
		if err := store.UpdateModel(controller, name, details); err != nil {
			return "", fmt.Errorf("the client store refuses model %q: %v", model, err)
		}
	}
	return "", nil
}

// option: the last value of a string option (as gnuflag keeps it).
func option(argv []string, names ...string) string {
	value := ""
	for i, a := range argv {
		for _, name := range names {
			if a == name && i+1 < len(argv) {
				value = argv[i+1]
			} else if strings.HasPrefix(a, name+"=") {
				value = strings.TrimPrefix(a, name+"=")
			}
		}
	}
	return value
}

// readCharm: core/charm NewCharmAtPath, called through reflect because its parameters differ
// between Juju lines (2.9: path, series; 3.x: path).
func readCharm(path string) error {
	fn := reflect.ValueOf(corecharm.NewCharmAtPath)
	args := []reflect.Value{reflect.ValueOf(path)}
	for len(args) < fn.Type().NumIn() {
		args = append(args, reflect.ValueOf("bionic"))
	}
	out := fn.Call(args)
	if err, _ := out[len(out)-1].Interface().(error); err != nil {
		if err == os.ErrNotExist {
			return fmt.Errorf("no such file (juju would look it up as a charm name): %v", err)
		}
		return err
	}
	return nil
}

func main() {
	corpusPath := flag.String("corpus", "", "corpus.json of bundle.osm_conformance.corpus")
	outPath := flag.String("out", "", "where to write the results")
	controller := flag.String("controller", "osm-vca", "the client store's current controller")
	flag.Parse()
	data, err := os.ReadFile(*corpusPath)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	var corpus struct {
		Commands []item `json:"commands"`
	}
	if err := json.Unmarshal(data, &corpus); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	results := []result{}
	for i, c := range corpus.Commands {
		if c.Program != "juju" {
			continue
		}
		_, err := parse(c.Argv, *controller)
		r := result{Index: i, OK: err == nil}
		if err != nil {
			r.Message = err.Error()
		}
		results = append(results, r)
	}
	names := []string{}
	for name := range commands() {
		names = append(names, name)
	}
	doc := map[string]interface{}{
		"client":   "juju",
		"versions": map[string]string{"juju": jujuversion.Current.String()},
		"commands": names,
		"results":  results,
	}
	out, _ := json.MarshalIndent(doc, "", " ")
	if err := os.WriteFile(*outPath, append(out, '\n'), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
}

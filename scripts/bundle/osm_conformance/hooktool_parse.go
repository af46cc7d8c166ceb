//go:build ignore

// hooktool_parse: every hook-tool command line our charm code runs itself (the hook gate, before
// ops) through Juju's own hook-tool commands, without a unit agent. Ours; built at run time
// against the user's Juju source tree (JUJU_SRC) by bundle.osm_conformance.hooktool, from inside
// that tree so its go.mod pins every import:
//
//	cd JUJU_SRC && go build -o BIN /path/to/hooktool_parse.go
//	BIN --corpus corpus.json --out result.json
//
// Per line, what the unit agent's jujuc server runs for a tool call (worker/uniter/runner/jujuc,
// Jujuc.Main then cmd.Main): the command from jujuc.NewCommand(ctx, name) (the registry the
// tool symlinks of jujud resolve through), gnuflag SetFlags + Parse, the command's Init, then
// its Run, whose stdout is returned as the tool's answer. The Context is a stub holding the
// corpus's fixture (this unit, its relations with their units and data, the charm's config, the
// hook's relation and remote unit): it embeds jujuc.Context and answers only the methods these
// commands call; any other method panics (reported, never counted as accepted).
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/juju/charm/v8"
	"github.com/juju/cmd/v3"
	"github.com/juju/errors"
	"github.com/juju/gnuflag"

	"github.com/juju/juju/core/life"
	"github.com/juju/juju/rpc/params"
	jujuversion "github.com/juju/juju/version"
	"github.com/juju/juju/worker/uniter/runner/jujuc"
)

type fixtureRelation struct {
	ID       int                          `json:"id"`
	Name     string                       `json:"name"`
	Units    []string                     `json:"units"`
	Settings map[string]map[string]string `json:"settings"`
}

type fixture struct {
	Unit      string                 `json:"unit"`
	Relations []fixtureRelation      `json:"relations"`
	Config    map[string]interface{} `json:"config"`
}

type item struct {
	Argv         []string `json:"argv"`
	HookRelation *int     `json:"hook_relation"`
	RemoteUnit   string   `json:"remote_unit"`
}

type result struct {
	Index   int                 `json:"index"`
	OK      bool                `json:"ok"`
	Stage   string              `json:"stage"`
	Message string              `json:"message"`
	Stdout  string              `json:"stdout"`
	Results map[string][]string `json:"action_results,omitempty"`
}

type stubSettings struct{ m params.Settings }

func (s *stubSettings) Map() params.Settings { return s.m }
func (s *stubSettings) Set(k, v string)      { s.m[k] = v }
func (s *stubSettings) Delete(k string)      { delete(s.m, k) }

type stubRelation struct {
	jujuc.ContextRelation
	r    fixtureRelation
	unit string
}

func (r *stubRelation) Id() int             { return r.r.ID }
func (r *stubRelation) Name() string        { return r.r.Name }
func (r *stubRelation) FakeId() string      { return fmt.Sprintf("%s:%d", r.r.Name, r.r.ID) }
func (r *stubRelation) UnitNames() []string { return append([]string(nil), r.r.Units...) }
func (r *stubRelation) Life() life.Value    { return life.Alive }
func (r *stubRelation) Suspended() bool     { return false }

func (r *stubRelation) bag(unit string) params.Settings {
	out := params.Settings{}
	for k, v := range r.r.Settings[unit] {
		out[k] = v
	}
	return out
}

func (r *stubRelation) Settings() (jujuc.Settings, error) { return &stubSettings{r.bag(r.unit)}, nil }

// ReadApplicationSettings: the fixture keeps an application's bag under its name, beside the units'.
func (r *stubRelation) ReadApplicationSettings(app string) (params.Settings, error) {
	if _, ok := r.r.Settings[app]; !ok {
		return nil, errors.NotFoundf("application %q in relation %d", app, r.r.ID)
	}
	return r.bag(app), nil
}

func (r *stubRelation) ReadSettings(unit string) (params.Settings, error) {
	if _, ok := r.r.Settings[unit]; !ok {
		return nil, errors.NotFoundf("unit %q in relation %d", unit, r.r.ID)
	}
	return r.bag(unit), nil
}

type stubContext struct {
	jujuc.Context
	f       fixture
	hook    *int
	remote  string
	results map[string][]string
}

func (c *stubContext) UnitName() string        { return c.f.Unit }
func (c *stubContext) IsLeader() (bool, error) { return false, nil }
func (c *stubContext) ConfigSettings() (charm.Settings, error) {
	out := charm.Settings{}
	for k, v := range c.f.Config {
		// Juju holds an "int" option as int64 and a "float" one as float64 (charm.Config
		// ParseSettingsStrings/ValidateSettings): the fixture's JSON numbers are read as such.
		if n, ok := v.(json.Number); ok {
			if i, err := n.Int64(); err == nil {
				v = i
			} else if f, err := n.Float64(); err == nil {
				v = f
			}
		}
		out[k] = v
	}
	return out, nil
}

func (c *stubContext) Relation(id int) (jujuc.ContextRelation, error) {
	for _, r := range c.f.Relations {
		if r.ID == id {
			return &stubRelation{r: r, unit: c.f.Unit}, nil
		}
	}
	return nil, errors.NotFoundf("relation %d", id)
}

func (c *stubContext) RelationIds() ([]int, error) {
	ids := []int{}
	for _, r := range c.f.Relations {
		ids = append(ids, r.ID)
	}
	return ids, nil
}

func (c *stubContext) HookRelation() (jujuc.ContextRelation, error) {
	if c.hook == nil {
		return nil, errors.NotFoundf("hook relation")
	}
	return c.Relation(*c.hook)
}

func (c *stubContext) RemoteUnitName() (string, error) {
	if c.remote == "" {
		return "", errors.NotFoundf("remote unit")
	}
	return c.remote, nil
}

func (c *stubContext) RemoteApplicationName() (string, error) {
	if c.remote == "" {
		return "", errors.NotFoundf("remote application")
	}
	return strings.SplitN(c.remote, "/", 2)[0], nil
}

func (c *stubContext) UpdateActionResults(keys []string, value string) error {
	c.results[strings.Join(keys, ".")] = append(c.results[strings.Join(keys, ".")], value)
	return nil
}

// run: cmd.Main's steps for one line, each step's error reported with the step's name.
func run(f fixture, it item) (r result) {
	ctx := &stubContext{f: f, hook: it.HookRelation, remote: it.RemoteUnit, results: map[string][]string{}}
	r.Stage = "new"
	defer func() {
		if p := recover(); p != nil {
			r.OK, r.Message = false, fmt.Sprintf("the stub context lacks what Juju called: %v", p)
		}
	}()
	if len(it.Argv) == 0 {
		r.Message = "empty command line"
		return r
	}
	c, err := jujuc.NewCommand(ctx, it.Argv[0])
	if err != nil {
		r.Message = err.Error()
		return r
	}
	r.Stage = "parse"
	fs := gnuflag.NewFlagSetWithFlagKnownAs(c.Info().Name, gnuflag.ContinueOnError, cmd.FlagAlias(c, "flag"))
	fs.SetOutput(io.Discard)
	c.SetFlags(fs)
	if err := fs.Parse(c.AllowInterspersedFlags(), it.Argv[1:]); err != nil {
		r.Message = err.Error()
		return r
	}
	r.Stage = "init"
	if err := c.Init(fs.Args()); err != nil {
		r.Message = err.Error()
		return r
	}
	r.Stage = "run"
	var stdout, stderr bytes.Buffer
	cctx := &cmd.Context{Dir: os.TempDir(), Stdin: strings.NewReader(""), Stdout: &stdout, Stderr: &stderr}
	if err := c.Run(cctx); err != nil {
		r.Message = err.Error()
		return r
	}
	r.OK, r.Stdout = true, stdout.String()
	if len(ctx.results) > 0 {
		r.Results = ctx.results
	}
	return r
}

func main() {
	corpusPath := flag.String("corpus", "", "corpus.json of bundle.osm_conformance.hooktool")
	outPath := flag.String("out", "", "where to write the results")
	flag.Parse()
	data, err := os.ReadFile(*corpusPath)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	var corpus struct {
		Fixture fixture `json:"fixture"`
		Lines   []item  `json:"lines"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&corpus); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	results := []result{}
	for i, it := range corpus.Lines {
		r := run(corpus.Fixture, it)
		r.Index = i
		results = append(results, r)
	}
	doc := map[string]interface{}{
		"client":   "jujuc",
		"versions": map[string]string{"juju": jujuversion.Current.String()},
		"commands": jujuc.CommandNames(),
		"results":  results,
	}
	out, _ := json.MarshalIndent(doc, "", " ")
	if err := os.WriteFile(*outPath, append(out, '\n'), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
}

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
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

// latest-handshakes as wg(8) prints it: key, tab, unix seconds (0: never); other lines skipped.
func TestHandshakesReadsWgsLines(t *testing.T) {
	a, b := keyText(key(1)), keyText(key(2))
	tool, args := fakeTool(t, a+"\\t1764270000\\n"+b+"\\t0\\nnot a line\\n"+a+" x y\\n")
	got, err := (&WG{Tool: tool, Name: "wg-s6a"}).Handshakes()
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[key(1)] != 1764270000 || got[key(2)] != 0 {
		t.Fatalf("handshakes %v", got)
	}
	if data, _ := os.ReadFile(args); string(data) != "show\nwg-s6a\nlatest-handshakes\n" {
		t.Fatalf("args %q", data)
	}
}

// ClearPSK removes the key the way wg(8) documents it: preshared-key /dev/null.
func TestClearPSKSetsDevNull(t *testing.T) {
	tool, args := fakeTool(t, "")
	if err := (&WG{Tool: tool, Name: "wg-s6a"}).ClearPSK(key(3)); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(args)
	want := strings.Join([]string{"set", "wg-s6a", "peer", keyText(key(3)), "preshared-key", "/dev/null"}, "\n") + "\n"
	if string(data) != want {
		t.Fatalf("args %q", data)
	}
}

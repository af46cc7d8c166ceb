// Command vca-hookclient is the compiled hook-tool client of the emulated VCA.
//
// It speaks the protocol of scripts/testbed/emulators/hookclient.py (that file describes it) and exists
// for one reason: a tool call of a hook costs an interpreter start with the Python client
// (about 12 ms) and about 1 ms with this one. ops 1.5.4 calls relation-list once per relation
// of an endpoint in every relation hook, so a hub with k relations makes k calls per hook; on
// Juju these are calls of jujuc, the unit agent's compiled client. The tool is the name it was
// started under (bin/config-get -> vca-hookclient), or its first argument.
package main

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
)

const protocol = "2"

func readsStdin(args []string) bool {
	for i, a := range args {
		if a == "--file=-" || (a == "--file" && i+1 < len(args) && args[i+1] == "-") {
			return true
		}
	}
	return false
}

func request(tool string, args []string, stdin []byte) []byte {
	fields := []string{protocol, tool, os.Getenv("JUJU_CONTEXT_ID"), os.Getenv("JUJU_UNIT_NAME"),
		os.Getenv("JUJU_RELATION_ID"), os.Getenv("JUJU_REMOTE_UNIT"), strconv.Itoa(len(args))}
	fields = append(fields, args...)
	var buf bytes.Buffer
	for _, f := range fields {
		buf.WriteString(f)
		buf.WriteByte(0)
	}
	buf.Write(stdin)
	return buf.Bytes()
}

func call(path string, req []byte) (int, []byte, []byte, error) {
	conn, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return 0, nil, nil, err
	}
	defer conn.Close()
	if _, err := conn.Write(req); err != nil {
		return 0, nil, nil, err
	}
	if err := conn.CloseWrite(); err != nil {
		return 0, nil, nil, err
	}
	resp, err := io.ReadAll(conn)
	if err != nil {
		return 0, nil, nil, err
	}
	parts := bytes.SplitN(resp, []byte{0}, 3)
	if len(parts) != 3 {
		return 0, nil, nil, fmt.Errorf("malformed answer")
	}
	code, err := strconv.Atoi(string(parts[0]))
	if err != nil {
		return 0, nil, nil, fmt.Errorf("malformed exit status")
	}
	return code, parts[1], parts[2], nil
}

func main() {
	tool, args := filepath.Base(os.Args[0]), os.Args[1:]
	if tool == "vca-hookclient" {
		if len(args) == 0 {
			fmt.Fprintln(os.Stderr, "usage: vca-hookclient TOOL [ARG...]")
			os.Exit(2)
		}
		tool, args = args[0], args[1:]
	}
	var stdin []byte
	if readsStdin(args) {
		var err error
		if stdin, err = io.ReadAll(os.Stdin); err != nil {
			fmt.Fprintf(os.Stderr, "%s: cannot read standard input: %v\n", tool, err)
			os.Exit(1)
		}
	}
	code, out, errOut, err := call(os.Getenv("VPNAAS_VCA_SOCKET"), request(tool, args, stdin))
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: the emulated VCA does not answer: %v\n", tool, err)
		os.Exit(1)
	}
	os.Stdout.Write(out)
	os.Stderr.Write(errOut)
	os.Exit(code)
}

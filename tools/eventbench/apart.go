//go:build linux

package main

// bulk-apart: bulk's protocol and server, with the clients in a child
// process of their own, so that server and clients each have the
// runtime's scheduler (GOMAXPROCS, their Ps) to themselves, as a server
// and its clients do in production. The in-process bulk measures the
// server together with clients it shares the process's Ps with.
//
// Three processes take part in a round: the parent, the server's child
// (-child bulk-apart -server S) and the clients' child (the same, with
// -connect ADDR). They speak in lines, the children on their standard
// output, the parent on the children's standard input:
//
//	server child → parent:  ADDR host:port
//	clients child → parent: WARM          (the first 4 MiB came back)
//	parent → server child:  START         server child → parent: STARTED
//	parent → clients child: GO            (the clients' meter starts)
//	clients child → parent: MEASURED      (the clients' meter stopped)
//	parent → server child:  STOP          server child → parent: RESULT {…}
//	parent → clients child: FINISH        clients child → parent: RESULT {…}
//
// then the parent closes the clients' standard input and waits for them,
// then the server's, whose child waits for every conn to close. The load
// runs throughout, so the server's meter, which starts one pipe hop
// before the clients' and stops two after, measures the same steady
// state; its CPU is scaled to the clients' interval.

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// lineReader reads the next line from a scanner and checks it.
type lineReader struct{ s *bufio.Scanner }

// expect reads the next line, which must be word alone or word followed
// by a space and more, and returns what follows.
func (l lineReader) expect(word string) (string, error) {
	if !l.s.Scan() {
		err := l.s.Err()
		if err == nil {
			err = io.EOF
		}
		return "", fmt.Errorf("waiting for %s: %w", word, err)
	}
	line := l.s.Text()
	if line == word {
		return "", nil
	}
	if rest, ok := strings.CutPrefix(line, word+" "); ok {
		return rest, nil
	}
	return "", fmt.Errorf("got %q, want %s", line, word)
}

// bulkApartServer is the server's child: it tells where s listens,
// meters its own CPU between START and STOP, reports it, and once its
// standard input closes waits for every conn to close.
func bulkApartServer(s server, out io.Writer, in io.Reader) (result, error) {
	cmds := lineReader{bufio.NewScanner(in)}
	if _, err := fmt.Fprintf(out, "ADDR %s\n", s.Addr()); err != nil {
		return result{}, err
	}
	if _, err := cmds.expect("START"); err != nil {
		return result{}, err
	}
	m := startMeter()
	if _, err := fmt.Fprintln(out, "STARTED"); err != nil {
		return result{}, err
	}
	if _, err := cmds.expect("STOP"); err != nil {
		return result{}, err
	}
	elapsed, cpu := m.stop()
	r := result{Ops: 1, Seconds: elapsed.Seconds(), CPUNanos: cpu, Extra: map[string]float64{"pid": float64(os.Getpid())}}
	if err := writeResult(out, r); err != nil {
		return result{}, err
	}
	for cmds.s.Scan() { // until the parent is done with the clients
	}
	if err := waitFor("the server to see the client close", time.Minute, func() bool { return s.Open() == 0 }); err != nil {
		return result{}, err
	}
	return r, nil
}

// bulkApartClients is the clients' child: bulk's clients against addr,
// their measured part started and ended at the parent's word.
func bulkApartClients(addr string, duration time.Duration, out io.Writer, in io.Reader) (result, error) {
	cmds := lineReader{bufio.NewScanner(in)}
	say := func(line, then string) func() error {
		return func() error {
			if _, err := fmt.Fprintln(out, line); err != nil {
				return err
			}
			_, err := cmds.expect(then)
			return err
		}
	}
	r, err := bulkClients(addr, duration, bulkHooks{measuring: say("WARM", "GO"), measured: say("MEASURED", "FINISH")})
	if err != nil {
		return result{}, err
	}
	r.Extra = map[string]float64{"pid": float64(os.Getpid())}
	return r, nil
}

// runApart runs one round of bulk-apart against srv: the server's child,
// the clients' child, and the relay between them.
func runApart(cfg config, exe, srv string) (result, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*cfg.duration+4*time.Minute)
	defer cancel()
	const w = "bulk-apart"
	sc, err := startChild(ctx, exe, childArgs(cfg, w, srv)...)
	if err != nil {
		return result{}, err
	}
	r, err := func() (result, error) {
		addr, err := sc.expect("ADDR")
		if err != nil {
			return result{}, fmt.Errorf("server: %w", err)
		}
		cc, err := startChild(ctx, exe, append(childArgs(cfg, w, srv), "-connect", addr)...)
		if err != nil {
			return result{}, err
		}
		r, err := relayApart(sc, cc)
		if err = cc.wait(err); err != nil {
			return result{}, fmt.Errorf("clients: %w", err)
		}
		return r, nil
	}()
	if err = sc.wait(err); err != nil {
		return result{}, fmt.Errorf("%s %s: %w", w, srv, err)
	}
	return r, nil
}

// relayApart is the parent's part of a bulk-apart round once both
// children run: it starts and stops the server's meter at the clients'
// word, and joins their results: the clients' bytes and seconds, the
// server's CPU (scaled to the clients' interval) as CPUNanos, and the
// clients' CPU as Extra["client_cpu_ns"].
func relayApart(sc, cc *child) (result, error) {
	step := func(c *child, send, expect string) error {
		if send != "" {
			if _, err := fmt.Fprintln(c.stdin, send); err != nil {
				return err
			}
		}
		if expect != "" {
			_, err := c.expect(expect)
			return err
		}
		return nil
	}
	for _, s := range []struct {
		c            *child
		send, expect string
	}{{cc, "", "WARM"}, {sc, "START", "STARTED"}, {cc, "GO", "MEASURED"}, {sc, "STOP", ""}} {
		if err := step(s.c, s.send, s.expect); err != nil {
			return result{}, err
		}
	}
	sr, err := readResult(sc.lines)
	if err != nil {
		return result{}, fmt.Errorf("server: %w", err)
	}
	if err := step(cc, "FINISH", ""); err != nil {
		return result{}, err
	}
	r, err := readResult(cc.lines)
	if err != nil {
		return result{}, fmt.Errorf("clients: %w", err)
	}
	if sr.Seconds <= 0 || r.Seconds <= 0 {
		return result{}, fmt.Errorf("nothing measured: server %+v, clients %+v", sr, r)
	}
	r.Extra = map[string]float64{
		"client_cpu_ns": float64(r.CPUNanos),
		"client_pid":    r.Extra["pid"],
		"server_cpu_ns": float64(sr.CPUNanos), // over server_secs
		"server_secs":   sr.Seconds,
		"server_pid":    sr.Extra["pid"],
	}
	r.CPUNanos = int64(float64(sr.CPUNanos) * r.Seconds / sr.Seconds)
	return r, nil
}

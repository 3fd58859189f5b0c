//go:build linux

package testutil

import (
	"context"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/dns/dnsmessage"
)

// FakeDNS is a DNS server on 127.0.0.1 for tests of name resolution: it
// answers A and AAAA questions from its table, NXDOMAIN for names not in
// it, never answers the families a name drops, and records every
// question it gets.
type FakeDNS struct {
	pc      net.PacketConn
	mu      sync.Mutex
	names   map[string]DNSEntry // lower case, with the root's dot
	queries []string
}

// DNSEntry is one name's records, and the query types left unanswered.
type DNSEntry struct {
	A, AAAA         []net.IP
	DropA, DropAAAA bool
}

// NewFakeDNS starts a server, stopped when t ends.
func NewFakeDNS(t testing.TB) *FakeDNS {
	t.Helper()
	pc, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &FakeDNS{pc: pc, names: map[string]DNSEntry{}}
	done := make(chan struct{})
	go func() { defer close(done); f.serve() }()
	t.Cleanup(func() { pc.Close(); <-done })
	return f
}

// Set gives name (with or without the final dot) its entry.
func (f *FakeDNS) Set(name string, e DNSEntry) {
	f.mu.Lock()
	f.names[strings.ToLower(strings.TrimSuffix(name, "."))+"."] = e
	f.mu.Unlock()
}

// Queries returns the questions asked since the last call, as "A name.".
func (f *FakeDNS) Queries() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	q := f.queries
	f.queries = nil
	return q
}

// Resolver is a pure-Go resolver that asks f only.
func (f *FakeDNS) Resolver() *net.Resolver {
	addr := f.pc.LocalAddr().String()
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		d := net.Dialer{Timeout: 5 * time.Second}
		return d.DialContext(ctx, "udp4", addr)
	}}
}

func (f *FakeDNS) serve() {
	buf := make([]byte, 1500)
	for {
		n, addr, err := f.pc.ReadFrom(buf)
		if err != nil {
			return
		}
		if msg, ok := f.answer(buf[:n]); ok {
			f.pc.WriteTo(msg, addr)
		}
	}
}

// answer builds the reply to one query, or reports none is due.
func (f *FakeDNS) answer(query []byte) ([]byte, bool) {
	var p dnsmessage.Parser
	h, err := p.Start(query)
	if err != nil {
		return nil, false
	}
	q, err := p.Question()
	if err != nil {
		return nil, false
	}
	name := strings.ToLower(q.Name.String())
	f.mu.Lock()
	f.queries = append(f.queries, strings.TrimPrefix(q.Type.String(), "Type")+" "+name)
	e, ok := f.names[name]
	f.mu.Unlock()
	if ok && (q.Type == dnsmessage.TypeA && e.DropA || q.Type == dnsmessage.TypeAAAA && e.DropAAAA) {
		return nil, false
	}
	rh := dnsmessage.Header{ID: h.ID, Response: true, Authoritative: true,
		RecursionDesired: h.RecursionDesired, RecursionAvailable: true}
	if !ok {
		rh.RCode = dnsmessage.RCodeNameError
	}
	b := dnsmessage.NewBuilder(nil, rh)
	b.StartQuestions()
	b.Question(q)
	b.StartAnswers()
	rr := dnsmessage.ResourceHeader{Name: q.Name, Class: dnsmessage.ClassINET, TTL: 60}
	switch {
	case q.Type == dnsmessage.TypeA:
		for _, ip := range e.A {
			b.AResource(rr, dnsmessage.AResource{A: [4]byte(ip.To4())})
		}
	case q.Type == dnsmessage.TypeAAAA:
		for _, ip := range e.AAAA {
			b.AAAAResource(rr, dnsmessage.AAAAResource{AAAA: [16]byte(ip.To16())})
		}
	}
	msg, err := b.Finish()
	return msg, err == nil
}

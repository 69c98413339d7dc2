package main

import (
	"fmt"
	"io"
	"net"
	"sync"
	"time"
)

// proxyMode is how the webhook proxy treats the API server's calls.
type proxyMode int

const (
	// proxyUp forwards each connection to the first replica that accepts it.
	proxyUp proxyMode = iota
	// proxyRefuse closes each connection at once: the webhook is down.
	proxyRefuse
	// proxyHang accepts connections and never answers: the webhook hangs
	// until the API server's call times out.
	proxyHang
)

// webhookProxy listens where the local overlay registers the webhooks
// (localhost:9443, both address families) and forwards raw TCP, TLS
// included, to the replicas' webhook servers. It lets the chaos harness run
// two replicas on one host and take the webhook down while the controller
// keeps running.
type webhookProxy struct {
	listener net.Listener

	mu       sync.Mutex
	mode     proxyMode
	backends func() []string
	hung     []net.Conn
	// active are the forwarded connections; the API server keeps its
	// connections to a webhook alive, so an outage must close them.
	active map[net.Conn]bool
}

func newWebhookProxy(addr string, backends func() []string) (*webhookProxy, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("the webhook proxy cannot listen on %s (is another controller running?): %w", addr, err)
	}
	p := &webhookProxy{listener: l, backends: backends, active: map[net.Conn]bool{}}
	go p.serve()
	return p, nil
}

func (p *webhookProxy) setMode(m proxyMode) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mode = m
	if m != proxyUp {
		for c := range p.active {
			_ = c.Close()
		}
		clear(p.active)
	}
	if m != proxyHang {
		for _, c := range p.hung {
			_ = c.Close()
		}
		p.hung = nil
	}
}

func (p *webhookProxy) close() {
	_ = p.listener.Close()
	p.setMode(proxyRefuse)
}

func (p *webhookProxy) serve() {
	for {
		conn, err := p.listener.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		mode, backends := p.mode, p.backends
		if mode == proxyHang {
			p.hung = append(p.hung, conn)
		}
		p.mu.Unlock()
		switch mode {
		case proxyRefuse:
			_ = conn.Close()
		case proxyUp:
			go p.forward(conn, backends())
		}
	}
}

func (p *webhookProxy) forward(conn net.Conn, backends []string) {
	p.mu.Lock()
	p.active[conn] = true
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		delete(p.active, conn)
		p.mu.Unlock()
		_ = conn.Close()
	}()
	for _, addr := range backends {
		backend, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			continue
		}
		defer func() { _ = backend.Close() }()
		done := make(chan struct{}, 2)
		go func() { _, _ = io.Copy(backend, conn); done <- struct{}{} }()
		go func() { _, _ = io.Copy(conn, backend); done <- struct{}{} }()
		<-done
		return
	}
}

package server

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"sync"

	"github.com/meteorbench/meteorbench/internal/link"
	"github.com/meteorbench/meteorbench/internal/link/netns"
)

// listenInNetNS listens on port inside the network namespace name (run's
// packet link: the load generator reaches the server there, through the
// link), on every address of the namespace, with the link's TCP
// congestion control on the listener, which its connections inherit.
func listenInNetNS(name string, port int) (net.Listener, error) {
	ns, err := netns.Open(name)
	if err != nil {
		return nil, fmt.Errorf("--netns: %w", err)
	}
	var ln net.Listener
	err = ns.Do(func() error {
		lc := net.ListenConfig{Control: netns.ControlCongestion(link.Congestion)}
		var err error
		ln, err = lc.Listen(context.Background(), "tcp4", ":"+strconv.Itoa(port))
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("--netns %s: %w", name, err)
	}
	return ln, nil
}

// joined accepts from several listeners as one; its Addr is the first's.
type joined struct {
	lns   []net.Listener
	conns chan acceptResult
	done  chan struct{}
	once  sync.Once
	wg    sync.WaitGroup
}

type acceptResult struct {
	c   net.Conn
	err error
}

// joinListeners serves lns as one listener: Accept returns the next
// connection of any of them, Close closes them all.
func joinListeners(lns ...net.Listener) net.Listener {
	j := &joined{lns: lns, conns: make(chan acceptResult), done: make(chan struct{})}
	for _, ln := range lns {
		j.wg.Add(1)
		go func() {
			defer j.wg.Done()
			for {
				c, err := ln.Accept()
				select {
				case j.conns <- acceptResult{c, err}:
				case <-j.done:
					if c != nil {
						c.Close()
					}
					return
				}
				if err != nil {
					if ne, ok := err.(interface{ Temporary() bool }); !ok || !ne.Temporary() {
						return
					}
				}
			}
		}()
	}
	return j
}

func (j *joined) Accept() (net.Conn, error) {
	select {
	case r := <-j.conns:
		return r.c, r.err
	case <-j.done:
		return nil, net.ErrClosed
	}
}

func (j *joined) Close() error {
	var err error
	j.once.Do(func() {
		close(j.done)
		for _, ln := range j.lns {
			if e := ln.Close(); e != nil && err == nil {
				err = e
			}
		}
		j.wg.Wait()
	})
	return err
}

func (j *joined) Addr() net.Addr { return j.lns[0].Addr() }

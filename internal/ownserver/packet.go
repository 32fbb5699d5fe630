package ownserver

import (
	"context"
	"fmt"
	"net"
	"slices"

	"github.com/meteorbench/meteorbench/internal/link"
	"github.com/meteorbench/meteorbench/internal/loadgen/plan"
)

// startPacket makes the packet link for cfg's links when it has one: the
// own server will listen in its server namespace (serve --netns) and the
// cells dial from the other. Where the link cannot be made (not root, no
// /dev/net/tun) the links run on the TCP relay, said in one line, unless
// one of them has loss, jitter or reordering, which only the packet link
// emulates: then it is an error naming --link. stop removes it (nil when
// none was made).
func startPacket(cfg *plan.Config, note func(format string, args ...any)) (stop func(), err error) {
	i := slices.IndexFunc(cfg.Links, func(l link.Spec) bool { return !l.None() })
	if i < 0 {
		return nil, nil
	}
	p, swept, err := link.NewPacket()
	if len(swept) > 0 {
		note("removed the network namespaces of killed runs: %v", swept)
	}
	if err != nil {
		if j := slices.IndexFunc(cfg.Links, link.Spec.Impaired); j >= 0 {
			return nil, fmt.Errorf("--link %s: loss, jitter and reordering need the packet link, not available here: %w", cfg.Links[j], err)
		}
		note("packet link not available here (%v): --link runs through the TCP relay, which delays and paces bytes but loses no packet", err)
		return nil, nil
	}
	cfg.Packet = p
	return func() {
		if err := p.Close(); err != nil {
			note("packet link: %v", err)
		}
	}, nil
}

// checkLinks measures each link of cfg through its packet link (a quick
// link.Check: delay, loss, rate) into cfg.LinkFidelity, one line each to
// note; a link out of its bounds is said so in the line.
func checkLinks(ctx context.Context, cfg *plan.Config, note func(format string, args ...any)) error {
	for _, l := range cfg.Links {
		if l.None() {
			continue
		}
		r, err := link.Check(ctx, cfg.Packet, l, link.CheckOptions{Quick: true})
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("--link %s: measure the packet link: %w", l, err)
		}
		cfg.LinkFidelity = append(cfg.LinkFidelity, r)
		note("packet link %s", r)
		if !r.OK() {
			// Said, not refused: the figures are still measured through
			// what the link delivers, which the line above gives.
			note("warning: the packet link %s is out of its bounds here now (the forwarder shares this machine's CPUs): read the cells through it with that line", l)
		}
	}
	return nil
}

// portOf is addr's port.
func portOf(addr string) string {
	_, port, _ := net.SplitHostPort(addr)
	return port
}

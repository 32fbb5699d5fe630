package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/meteorbench/meteorbench/internal/job"
	"github.com/meteorbench/meteorbench/internal/link"
)

func newLinkCmd() *cobra.Command {
	var (
		check bool
		links []string
		o     link.CheckOptions
	)
	cmd := &cobra.Command{
		Use:   "link --check",
		Short: "Measure the packet link: delay, loss, rate and TCP goodput against what it was set to",
		Long: `Make run's packet link (two network namespaces joined by TUN devices and
meteorbench's forwarder; root and /dev/net/tun), set it to each --link and
measure what it delivers: the median one-way delay of paced UDP datagrams
(bound: within 0.5 ms of RTT/2), the loss over 10,000 datagrams (within
±10% of the set rate), the rate of datagrams sent faster than the link
(within 2%), and one Reno TCP flow's goodput at 1% loss against the Mathis
et al. bound MSS/RTT · 1.22/√p (within ±30%). One line per link; exit 1
when one is out of bounds or the link is not available here.

The default link has 10% loss: there ±10% over 10,000 packets is 3.3
standard deviations of the loss process; at 1% it is one.`,
		Example: `  meteorbench link --check
  meteorbench link --check --link 20mbit/40ms/1%loss,50mbit/80ms/2%loss/4burst`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !check {
				return usageError{errors.New("link: give --check")}
			}
			var specs []link.Spec
			for _, text := range links {
				s, err := link.Parse(text)
				if err != nil {
					return usageError{fmt.Errorf("--%w", err)}
				}
				if s.None() {
					return usageError{fmt.Errorf("--link %s: nothing to check", text)}
				}
				specs = append(specs, s)
			}
			if o.TCPTime <= 0 {
				return usageError{fmt.Errorf("--tcp-time %v: must be positive", o.TCPTime)}
			}
			return job.LinkCheck(cmd.Context(), specs, o, cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.BoolVar(&check, "check", false, "measure the link's fidelity")
	f.StringSliceVar(&links, "link", []string{link.DefaultCheck}, "the links to measure, as run's --link takes them")
	f.DurationVar(&o.TCPTime, "tcp-time", 5e9, "how long the TCP flow at 1% loss runs")
	return cmd
}

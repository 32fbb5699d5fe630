package server

import (
	"context"
	"log/slog"
	"net"
	"time"

	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/peer"
)

// The connection side of the send budget (see limits.go): the credentials
// that wrap each accepted gRPC connection so the budget sees the bytes it
// writes, and how a call finds its connection's budget.

// sendBudgetFrom returns the budget of the connection a call came on, or
// nil (a connection not accepted through budgetCreds).
func sendBudgetFrom(ctx context.Context) *sendBudget {
	p, ok := peer.FromContext(ctx)
	if !ok {
		return nil
	}
	if ai, ok := p.AuthInfo.(budgetAuthInfo); ok {
		return ai.budget
	}
	return nil
}

// budgetConn counts what the socket takes, and gives the connection's
// share of the memBudget back when it closes.
type budgetConn struct {
	net.Conn
	budget *sendBudget
}

func (c *budgetConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	if n > 0 {
		c.budget.wrote(n)
	}
	return n, err
}

func (c *budgetConn) Close() error {
	c.budget.closeConn()
	return c.Conn.Close()
}

// budgetAuthInfo is the AuthInfo of a connection from budgetCreds: no
// security, and the connection's send budget.
type budgetAuthInfo struct {
	credentials.CommonAuthInfo
	budget *sendBudget
}

func (budgetAuthInfo) AuthType() string { return "insecure" }

// budgetCreds are server-side insecure transport credentials that give each
// connection a send budget of limits bytes, closed after a wait of stall,
// within the server's memBudget mem.
type budgetCreds struct {
	limits [lanes]int64
	stall  time.Duration
	log    *slog.Logger
	mem    *memBudget
}

func (c budgetCreds) ServerHandshake(conn net.Conn) (net.Conn, credentials.AuthInfo, error) {
	bc := &budgetConn{Conn: conn}
	bc.budget = newSendBudget(c.limits, c.stall, bc.Close, c.log, c.mem)
	return bc, budgetAuthInfo{CommonAuthInfo: credentials.CommonAuthInfo{SecurityLevel: credentials.NoSecurity}, budget: bc.budget}, nil
}

func (budgetCreds) ClientHandshake(_ context.Context, _ string, conn net.Conn) (net.Conn, credentials.AuthInfo, error) {
	return conn, budgetAuthInfo{CommonAuthInfo: credentials.CommonAuthInfo{SecurityLevel: credentials.NoSecurity}}, nil
}

func (budgetCreds) Info() credentials.ProtocolInfo {
	return credentials.ProtocolInfo{SecurityProtocol: "insecure"}
}

func (c budgetCreds) Clone() credentials.TransportCredentials { return c }

func (budgetCreds) OverrideServerName(string) error { return nil }

package lean

// SetChatText makes a lean gRPC chat caller send text from its next
// message on (tests of a server that refuses a message mid-stream).
func SetChatText(a any, text string) { a.(*grpcStream).x.(*chat).out.Text = text }

// Active is the number of streams open on a lean gRPC client's
// connections, and the number of connections (tests of a stream's reset).
func Active(c any) (streams, conns int) {
	g := c.(*grpcClient)
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, sl := range g.slots {
		if h := sl.h; h != nil {
			h.mu.Lock()
			if h.err == nil {
				streams += h.active
				conns++
			}
			h.mu.Unlock()
		}
	}
	return streams, conns
}

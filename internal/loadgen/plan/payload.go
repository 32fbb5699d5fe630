package plan

// payloadID names the run's payload in a condition; "" for the meteorites.
func (c Config) PayloadID() string {
	if c.Payload == nil {
		return ""
	}
	return c.Payload.ID()
}

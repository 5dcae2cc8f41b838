package client

import "time"

// SetTimeout sets the timeout of c's calls that are not streams, for tests
// of what the client says when the agent does not answer.
func SetTimeout(c *Client, d time.Duration) { c.timeout = d }

// Package wire holds podward's own wire types: the objects of the agent's
// endpoints that Kubernetes has no type for (docs/api.md) — today the node
// shutdown (ShutdownPath, ShutdownRequest, NodeShutdown). They are declared
// once, here, for the API server that writes them, the client that reads
// them, and internal/shutdown, whose status they are.
//
// It is a leaf: it imports nothing of podward (only the Kubernetes API
// machinery's types), so that internal/client may import it.
package wire

// Package local is the objects.Getter of a standalone agent: the
// ConfigMaps and Secrets applied to it (podward apply, a static pod file,
// the file of podward run), held in memory and, for serve, in the agent's
// store so that they survive its restarts.
//
// It has no Tokens: nothing standalone can mint a service account token,
// and the runtimes refuse a pod that needs one.
//
// It imports the objects contract, the model (decoding and the API
// server's validation) and nothing else of podward: the store is the Store
// interface it declares, never the agent nor the pod worker.
package local

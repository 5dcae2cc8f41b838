// Package runtime holds the vocabulary shared by podward's container
// runtimes and their one consumer, the pod worker: container handles, exit
// statuses and the events a runtime reports. The runtimes themselves live in
// sub-packages (process, fake); the interface they satisfy is declared by the
// pod worker, which is where it is used.
//
// It imports only the model and the Kubernetes API types.
package runtime

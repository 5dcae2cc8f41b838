// Package clusterobjects reads what a node's pods reference from the
// cluster's API server, as the kubelet's managers do: Managers watches each
// ConfigMap and Secret the registered pods reference, one object at a time
// (a list+watch with the field selector metadata.name, which is all the
// Node authorizer lets a node read), and TokenManager requests service
// account tokens bound to the pods (the TokenRequest API) and refreshes
// them, and Services keeps the Services of all namespaces (one informer,
// the kubelet's service lister) for the pods' service links.
//
// It implements internal/objects' contract (Getter, Registrar, Tokens,
// ServiceLister) and
// imports nothing of podward but internal/objects and internal/model;
// internal/daemon wires it in cluster mode and routes its Changes to the
// agent.
package clusterobjects

// Package volumes computes what a pod's configMap, secret, downwardAPI and
// projected volumes hold (a hostfs.Payload: each file's path, bytes and
// mode) from the pod and the objects it references, as the kubelet's
// volume plugins do: items (key, path, mode), defaultMode, optional, the
// downward API's fieldRef and resourceFieldRef, and service account tokens
// minted through objects.Tokens. Check refuses, naming the field, what
// podward cannot project (clusterTrustBundle, podCertificate, a token with
// nothing to mint it).
//
// It is pure but for its reads through runtime.Objects and of the token a
// volume holds now; writing the payload (hostfs.AtomicWrite) and where is
// the runtimes'. It imports the runtime contract, hostfs, the model and
// objects; never a concrete runtime, the pod worker or the agent.
package volumes

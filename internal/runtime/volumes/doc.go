// Package volumes computes what a pod's configMap, secret, downwardAPI and
// projected volumes hold (a hostfs.Payload: each file's path, bytes, mode
// and owner) from the pod and the objects it references, as the kubelet's
// volume plugins do: items (key, path, mode), defaultMode, optional, the
// downward API's fieldRef and resourceFieldRef (podspec.ResourceValue, as
// env's), service account tokens minted through objects.Tokens, and the
// pod's fsGroup and user. Setup and Refresh write them (hostfs.AtomicWrite;
// a tmpfs each for secret and projected volumes) where the runtime keeps
// them. What podward refuses of these volumes, naming the field, is
// podspec.CheckVolume's.
//
// It reads only through runtime.Objects and the volume as written now (the
// token it holds). It imports the runtime contract, hostfs, podspec, the
// model and objects; never a concrete runtime, the pod worker or the agent.
package volumes

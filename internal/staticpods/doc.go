// Package staticpods turns a directory of pod manifests into pods, like the
// kubelet's --pod-manifest-path: `podward serve --manifests DIR`.
//
// A Source owns the pods it created from the files of DIR (*.yaml, *.yml,
// *.json; hidden files and editor leftovers are ignored). Each such pod
// carries the annotations
//
//	podward.io/config-source: file:<absolute path of its file>
//	kubernetes.io/config.source: file
//
// which is how a restarted Source finds its pods again. What a file event
// does to the pods of that file:
//
//	file appears / changes ── decode, validate ──ok──▶ apply every pod (created,
//	                               │                   replaced or unchanged);
//	                               │                   delete its pods that the
//	                               │                   file no longer declares
//	                               └──bad──▶ report (event + log); its pods
//	                                         are left as they are
//	file disappears ──────────────────────▶ delete its pods gracefully
//
// A file is all or nothing: when one of its pods is invalid, none of the
// file's pods is touched. Events are read with inotify; a full rescan runs
// at start-up, every 20 s (so that a missed event heals) and on Sync.
//
// It imports the model and the agent (for the vocabulary of ApplyStatic); the
// agent itself is injected through the Applier interface declared here.
package staticpods

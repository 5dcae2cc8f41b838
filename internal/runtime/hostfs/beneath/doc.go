// Package beneath opens a path below a directory without following any
// symlink on the way: openat2 with RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS
// where the kernel has it, else a walk of openat(O_NOFOLLOW), one
// component at a time, as the kubelet's doSafeOpen does. Package hostfs
// checks and creates subPaths with it and the process runtime's init
// helper (package launch) opens them with it before it mounts them.
//
// It is a package of its own so that the shim binary, which runs the init
// helper, links it without hostfs's Kubernetes types. It imports only the
// standard library and golang.org/x/sys/unix.
package beneath
